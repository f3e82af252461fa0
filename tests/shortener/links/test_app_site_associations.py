"""Each domain's own apple-app-site-association document (docs/domains.md): the settings refuse a
map that names a domain the stack does not serve or holds something that is not a document, and a
request gets the document of the domain it came on (the default domain's on the API's own URL)."""

import json
import re
import shlex
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from pydantic import ValidationError

from shortener.links.app_site_associations import AppSiteAssociations
from shortener.settings import ApiSettings, api_settings
from tests.e2e.conftest import PROJECT_ROOT
from tests.support.api import call
from tests.support.events import api_event, http_api_event

SECRET = "edge-secret-for-app-links"
DEFAULT = {"applinks": {"details": [{"appIDs": ["TEAM000001.com.example.app"], "components": [{"/": "/*"}]}]}}
GO = {"applinks": {"details": [{"appIDs": ["TEAM000002.com.brand.app"], "components": [{"/": "/*"}]}]}}


def settings(**environment: str) -> ApiSettings:
    return ApiSettings.model_validate({"LINKS_TABLE": "links", **environment})


def test_each_named_domain_gets_its_own_document_and_the_others_the_default() -> None:
    # Given documents for the default domain and for go.example
    documents = settings(
        DOMAINS="go.example,shop.example",
        APPLE_APP_SITE_ASSOCIATION=json.dumps(DEFAULT),
        DOMAIN_APPLE_APP_SITE_ASSOCIATIONS=json.dumps({"Go.Example": GO}),
    ).app_site_associations()
    # Then go.example serves its own; shop.example, named by none, and the default domain the default
    assert json.loads(documents.for_domain("go.example")) == GO
    assert json.loads(documents.for_domain("shop.example")) == DEFAULT
    assert json.loads(documents.for_domain(None)) == DEFAULT


def test_the_documented_example_is_a_map_the_settings_take() -> None:
    # Given the parameter as docs/domains.md writes it (a shell word, as sam's overrides take it)
    text = (PROJECT_ROOT / "docs" / "domains.md").read_text(encoding="utf-8")
    [line] = re.findall(r"^DomainAppleAppSiteAssociations=.*$", text, re.MULTILINE)
    value = shlex.split(line)[0].partition("=")[2]
    # Then the settings take it, and go.brand-a.com serves its document
    documents = settings(DOMAINS="go.brand-a.com", DOMAIN_APPLE_APP_SITE_ASSOCIATIONS=value)
    served = json.loads(documents.app_site_associations().for_domain("go.brand-a.com"))
    assert served["applinks"]["details"][0]["appIDs"] == ["ABCDE12345.com.brand-a.app"]


def test_without_the_parameter_every_domain_serves_the_one_document() -> None:
    documents = settings(DOMAINS="go.example").app_site_associations()
    assert documents == AppSiteAssociations('{"applinks":{"details":[]}}', {})
    assert documents.for_domain("go.example") == documents.for_domain(None)


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        # A domain the stack does not serve (a typo, or the default domain's own name)
        (
            {"DOMAINS": "go.example", "DOMAIN_APPLE_APP_SITE_ASSOCIATIONS": json.dumps({"og.example": GO})},
            r"names og\.example: not among the stack's other domains \(go\.example\)",
        ),
        (
            {"DOMAIN_APPLE_APP_SITE_ASSOCIATIONS": json.dumps({"go.example": GO})},
            r"names go\.example: not among the stack's other domains \(none, Domains is empty\)",
        ),
        # A value that is not a document, or a map that is not an object, or text that is not JSON
        (
            {"DOMAINS": "go.example", "DOMAIN_APPLE_APP_SITE_ASSOCIATIONS": '{"go.example": ["TEAM.app"]}'},
            r"\['go\.example'\] must be a JSON object \(the document\), not list",
        ),
        (
            {"DOMAINS": "go.example", "DOMAIN_APPLE_APP_SITE_ASSOCIATIONS": json.dumps([GO])},
            r"must be a JSON object mapping a domain to its document.*got list",
        ),
        (
            {"DOMAINS": "go.example", "DOMAIN_APPLE_APP_SITE_ASSOCIATIONS": "{go.example: {}}"},
            r"DOMAIN_APPLE_APP_SITE_ASSOCIATIONS\n.*not JSON",
        ),
    ],
)
def test_a_map_the_stack_cannot_serve_is_a_settings_error_naming_it(
    environment: dict[str, str], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        settings(**environment)


@pytest.fixture
def api_with_app_links(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("DOMAINS", "go.example,shop.example")
    monkeypatch.setenv("EDGE_ORIGIN_SECRET", SECRET)
    monkeypatch.setenv("APPLE_APP_SITE_ASSOCIATION", json.dumps(DEFAULT))
    monkeypatch.setenv("DOMAIN_APPLE_APP_SITE_ASSOCIATIONS", json.dumps({"go.example": GO}))
    api_settings.cache_clear()
    api.app_site_associations.cache_clear()
    yield api
    api_settings.cache_clear()
    api.app_site_associations.cache_clear()


def document(api: ModuleType, path: str, host: str | None = None) -> Any:
    """The document a request for ``path`` gets: through the edge as a viewer of ``host``, or on the
    API's own URL (``host`` None)."""
    event = api_event("GET", path)
    if host is not None:
        event = http_api_event(event)
        event["headers"].update({"x-shortener-edge": SECRET, "x-shortener-host": host})
    answer = call(api, event)
    assert answer["statusCode"] == 200, answer["body"]
    return json.loads(answer["body"])


@pytest.mark.integration
def test_a_request_gets_the_document_of_the_domain_it_came_on(api_with_app_links: ModuleType) -> None:
    for path in ("/apple-app-site-association", "/.well-known/apple-app-site-association"):
        # Through the edge: the viewer's domain's own, else the default
        assert document(api_with_app_links, path, "go.example") == GO
        assert document(api_with_app_links, path, "GO.EXAMPLE.") == GO
        assert document(api_with_app_links, path, "shop.example") == DEFAULT
        assert document(api_with_app_links, path, "d111.cloudfront.net") == DEFAULT
        # The API's own URL names no domain: the default domain's, whatever a caller's header says
        assert document(api_with_app_links, path) == DEFAULT
        forged = api_event("GET", path, headers={"X-Shortener-Host": "go.example"})
        assert json.loads(call(api_with_app_links, forged)["body"]) == DEFAULT
