"""Several domains on one stack (docs/domains.md): a link answers on its own domain only, a caller
limited to some domains makes links on those only, and a link from before (no domain) is the
default domain's."""

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from shortener.access.model import Caller
from shortener.exceptions import DomainNotAllowedError, UnknownDomainError
from shortener.links.domains import ShortUrls
from shortener.settings import api_settings
from tests.support.api import ApiCaller, as_caller, call
from tests.support.events import api_event, http_api_event

SECRET = "edge-secret-for-domains"
URLS = ShortUrls("https://sho.rt/", "sho.rt", {"go.example": "https://go.example/"})


def member(domains: str = "") -> Caller:
    return Caller(owner_id="ann", role="member", domains=domains)


def test_a_link_names_its_domain_and_the_default_one_stores_none() -> None:
    assert URLS.names == ("sho.rt", "go.example")
    assert URLS.stored(None) is None
    assert URLS.stored("SHO.RT") is None
    assert URLS.stored("Go.Example") == "go.example"
    assert URLS.short_url("go.example", "abc") == "https://go.example/abc"
    assert URLS.short_url(None, "abc") == "https://sho.rt/abc"
    assert URLS.name_of(None) == "sho.rt"
    with pytest.raises(UnknownDomainError, match=r"sho\.rt, go\.example"):
        URLS.stored("other.example")


def test_a_caller_limited_to_domains_uses_only_those() -> None:
    assert URLS.for_caller("go.example", member()) == "go.example"
    assert URLS.for_caller("go.example", member("go.example")) == "go.example"
    # Naming none, a caller who may not use the default domain gets the first they may use
    assert URLS.for_caller(None, member("go.example")) == "go.example"
    with pytest.raises(DomainNotAllowedError, match=r"you may use go\.example"):
        URLS.for_caller("sho.rt", member("go.example"))
    # An admin may use every domain
    assert URLS.for_caller(None, Caller(owner_id="root", role="admin", domains="go.example")) is None


def test_the_host_a_request_came_to_names_its_domain() -> None:
    assert URLS.domain_of_host("GO.example.") == "go.example"
    assert URLS.domain_of_host("sho.rt") is None
    assert URLS.domain_of_host("d111.cloudfront.net") is None
    assert URLS.domain_of_host(None) is None


@pytest.fixture
def api_with_domains(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("DOMAINS", "go.example,shop.example")
    monkeypatch.setenv("EDGE_ORIGIN_SECRET", SECRET)
    api_settings.cache_clear()
    yield api
    api_settings.cache_clear()


def through_the_edge(api: ModuleType, code: str, host: str) -> dict[str, Any]:
    event = api_event("GET", f"/{code}", resource="/{code}", path_parameters={"code": code})
    event = http_api_event(event)
    event["headers"].update({"x-shortener-edge": SECRET, "x-shortener-host": host})
    return call(api, event)


@pytest.mark.integration
def test_a_link_answers_on_its_own_domain_only_and_on_the_apis_url(api_with_domains: ModuleType) -> None:
    ann = ApiCaller(api_with_domains, "ann")
    on_go = ann.shorten("https://example.com/go", domain="go.example")
    plain = ann.shorten("https://example.com/plain")
    assert on_go["domain"] == "go.example"
    assert on_go["short_url"] == f"https://go.example/{on_go['code']}"
    assert plain["short_url"] == f"https://sho.rt/{plain['code']}"
    # Through the edge, each answers on its own domain, 404 elsewhere
    assert through_the_edge(api_with_domains, on_go["code"], "go.example")["statusCode"] == 301
    assert through_the_edge(api_with_domains, on_go["code"], "shop.example")["statusCode"] == 404
    assert through_the_edge(api_with_domains, on_go["code"], "sho.rt")["statusCode"] == 404
    assert through_the_edge(api_with_domains, plain["code"], "sho.rt")["statusCode"] == 301
    assert through_the_edge(api_with_domains, plain["code"], "go.example")["statusCode"] == 404
    # The API's own URL answers every domain's links
    assert ann.follow(on_go["code"])["statusCode"] == 301
    # A view says the domain, and the list filters by it
    listed = json.loads(ann.request("GET", "/links", query={"domain": "go.example"})["body"])["links"]
    assert [link["code"] for link in listed] == [on_go["code"]]
    default = json.loads(ann.request("GET", "/links", query={"domain": "sho.rt"})["body"])["links"]
    assert [link["code"] for link in default] == [plain["code"]]
    assert ann.request("GET", "/links", query={"domain": "nope.example"})["statusCode"] == 400


@pytest.mark.integration
def test_a_key_limited_to_one_domain_cannot_make_links_on_another(api_with_domains: ModuleType) -> None:
    event = api_event(
        "POST", "/", body=json.dumps({"url": "https://example.com/x", "domain": "shop.example"})
    )
    event["headers"]["Content-Type"] = "application/json"
    as_caller(event, "limited")
    event["requestContext"]["authorizer"]["domains"] = "go.example"
    refused = call(api_with_domains, event)
    assert refused["statusCode"] == 403
    assert json.loads(refused["body"])["error"] == "domain_not_allowed"
    # In a bulk call the refusal is that link's outcome
    bulk = api_event(
        "POST",
        "/links/bulk",
        body=json.dumps(
            {
                "links": [
                    {"url": "https://example.com/a", "domain": "shop.example"},
                    {"url": "https://example.com/b"},
                ]
            }
        ),
    )
    bulk["headers"]["Content-Type"] = "application/json"
    as_caller(bulk, "limited")
    bulk["requestContext"]["authorizer"]["domains"] = "go.example"
    outcomes = json.loads(call(api_with_domains, bulk)["body"])["links"]
    assert [(o["status"], o.get("domain")) for o in outcomes] == [(403, None), (201, "go.example")]
    # GET /domains says which it may use
    listing = api_event("GET", "/domains")
    as_caller(listing, "limited")
    listing["requestContext"]["authorizer"]["domains"] = "go.example"
    domains = json.loads(call(api_with_domains, listing)["body"])["domains"]
    assert [(d["name"], d["default"], d["allowed"]) for d in domains] == [
        ("sho.rt", True, False),
        ("go.example", False, True),
        ("shop.example", False, False),
    ]


@pytest.mark.integration
def test_an_unknown_domain_is_a_422_naming_the_stacks_domains(api_with_domains: ModuleType) -> None:
    answer = ApiCaller(api_with_domains, "ann").request(
        "POST", "/", body={"url": "https://example.com/x", "domain": "other.example"}
    )
    assert answer["statusCode"] == 422
    assert json.loads(answer["body"])["error"] == "unknown_domain"
    assert "go.example" in json.loads(answer["body"])["message"]
