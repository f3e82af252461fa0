"""A change to a link invalidates its path at the edge (one CreateInvalidation of the changed
paths; more than 1,000 at once as one wildcard): shortener.links.edge_cache, against moto's
CloudFront."""

from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.links.edge_cache import WILDCARD_ABOVE, EdgeCache
from shortener.services import api as api_services
from shortener.settings import api_settings
from tests.support.api import ApiCaller

pytestmark = pytest.mark.integration

COMMENT = "test: short links"


@pytest.fixture
def distribution(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> str:
    cloudfront = boto3.client("cloudfront")
    created = cloudfront.create_distribution(
        DistributionConfig={
            "CallerReference": "edge",
            "Comment": COMMENT,
            "Enabled": True,
            "Origins": {
                "Quantity": 1,
                "Items": [
                    {
                        "Id": "api",
                        "DomainName": "abc.execute-api.us-east-1.amazonaws.com",
                        "CustomOriginConfig": {
                            "HTTPPort": 80,
                            "HTTPSPort": 443,
                            "OriginProtocolPolicy": "https-only",
                        },
                    }
                ],
            },
            "DefaultCacheBehavior": {"TargetOriginId": "api", "ViewerProtocolPolicy": "redirect-to-https"},
        }
    )
    monkeypatch.setenv("EDGE_DISTRIBUTION", COMMENT)
    api_settings.cache_clear()
    api_services.api_link_manager.cache_clear()
    api_services.api_takedowns.cache_clear()
    api_services._api_edge.cache_clear()
    return str(created["Distribution"]["Id"])


def invalidated_paths(distribution: str) -> list[list[str]]:
    cloudfront = boto3.client("cloudfront")
    listed = cloudfront.list_invalidations(DistributionId=distribution)["InvalidationList"].get("Items", [])
    batches: list[Any] = [
        cloudfront.get_invalidation(DistributionId=distribution, Id=item["Id"])["Invalidation"][
            "InvalidationBatch"
        ]
        for item in listed
    ]
    return [batch["Paths"]["Items"] for batch in batches]


def test_a_deleted_link_is_invalidated_at_the_edge(api: ModuleType, distribution: str) -> None:
    # Given a link
    alice = ApiCaller(api, "alice")
    code = alice.shorten("https://example.com/edge")["code"]
    assert invalidated_paths(distribution) == []
    # When it is deleted
    assert alice.link("DELETE", code)["statusCode"] == 200
    # Then its path was invalidated at the edge
    assert invalidated_paths(distribution) == [[f"/{code}"]]


def test_short_urls_name_the_edges_domain_when_no_base_is_configured(
    api: ModuleType, distribution: str
) -> None:
    # Given the edge on (its distribution found by its comment) and no PublicBaseUrl nor DomainName
    domain = boto3.client("cloudfront").get_distribution(Id=distribution)["Distribution"]["DomainName"]
    assert domain.endswith(".cloudfront.net")
    # When a link is made through the API's own host
    created = ApiCaller(api, "alice").shorten("https://example.com/edge-named")
    # Then its short URL names the edge, which answers it (docs/edge.md)
    assert created["short_url"] == f"https://{domain}/{created['code']}"


def test_a_configured_base_wins_over_the_edges_domain(
    api: ModuleType, distribution: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PUBLIC_BASE_URL", "https://sho.rt")
    api_settings.cache_clear()
    created = ApiCaller(api, "alice").shorten("https://example.com/edge-named")
    assert created["short_url"] == f"https://sho.rt/{created['code']}"


def test_many_codes_at_once_cost_one_wildcard_path(moto: None, distribution: str) -> None:
    edge = EdgeCache(COMMENT)
    assert edge.invalidate([f"c{n}" for n in range(WILDCARD_ABOVE + 1)])
    assert edge.invalidate(["a", "b", "a"])
    assert sorted(invalidated_paths(distribution)) == [["/*"], ["/a", "/b"]]


def test_without_its_distribution_nothing_is_invalidated(moto: None) -> None:
    assert EdgeCache("no such comment").invalidate(["a"]) is False


def test_blocking_a_host_invalidates_its_links_at_the_edge_in_one_request(
    api: ModuleType, distribution: str
) -> None:
    # Given two links to a host
    alice = ApiCaller(api, "alice")
    codes = [alice.shorten(f"https://evil.example/{n}")["code"] for n in range(2)]
    # When an admin blocks the host
    admin = ApiCaller(api, "root", role="admin")
    blocked = admin.request(
        "PUT",
        "/blocklist/evil.example",
        resource="/blocklist/{host}",
        path_parameters={"host": "evil.example"},
        body={"reason": "phishing"},
    )
    assert blocked["statusCode"] == 200, blocked
    # Then both paths went to the edge in one invalidation
    assert invalidated_paths(distribution) == [sorted(f"/{code}" for code in codes)]
