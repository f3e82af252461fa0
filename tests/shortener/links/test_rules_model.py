"""A link's rules as requests, bulk cells and stored items carry them: validated (countries,
weights, counts), every rule URL checked as ``url`` is and named when refused, CSV cells read and
written back, and items that read back as they were written."""

import os
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, ValidationError

from shortener.exceptions import AnswersEachVisitorError, InvalidUrlError
from shortener.links.model import (
    ATTRIBUTE_COLUMNS,
    Link,
    LinkAttributes,
    LinkUpdate,
    ShortenRequest,
    attributes_of,
)
from shortener.links.rules_model import normalise_rules, with_normalised_rules
from shortener.links.store_items import link_from_item, link_to_item
from shortener.links.urls import UrlPolicy
from shortener.request_model import problems
from shortener.settings import WorkerSettings

POLICY = UrlPolicy(frozenset({"http", "https"}), 2048, frozenset({"sho.rt"}))
CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _refusal(**fields: object) -> str:
    with pytest.raises(ValidationError) as refused:
        ShortenRequest.model_validate({"url": "https://example.com/", **fields})
    return problems(refused.value)


def test_the_bulk_columns_name_each_rule_and_each_utm_tag() -> None:
    for column in ("ios_url", "android_url", "geo", "variants", "forward_query", "utm_source", "utm_content"):
        assert column in ATTRIBUTE_COLUMNS
    assert "utm" not in ATTRIBUTE_COLUMNS


@pytest.mark.parametrize(
    ("fields", "named", "says"),
    [
        ({"geo": {"XX": "https://a.example/"}}, "geo", "ISO 3166-1"),
        ({"geo": {"DEU": "https://a.example/"}}, "geo", "ISO 3166-1"),
        (
            {
                "variants": [
                    {"url": "https://a.example/", "weight": 60},
                    {"url": "https://b.example/", "weight": 30},
                ]
            },
            "variants",
            "sum to 100, not 90",
        ),
        (
            {"variants": [{"url": f"https://{n}.example/", "weight": 10} for n in range(11)]},
            "variants",
            "at most 10",
        ),
        (
            {
                "variants": [
                    {"url": "https://a.example/", "weight": 0},
                    {"url": "https://b.example/", "weight": 100},
                ]
            },
            "variants.0.weight",
            "greater than or equal to 1",
        ),
        ({"variants": [{"url": "https://a.example/", "weight": True}]}, "variants.0.weight", "whole number"),
        (
            {
                "geo": {
                    code: "https://a.example/"
                    for code in [
                        "DE",
                        "FR",
                        "US",
                        "GB",
                        "IT",
                        "ES",
                        "NL",
                        "BE",
                        "AT",
                        "CH",
                        "PL",
                        "CZ",
                        "SK",
                        "HU",
                        "RO",
                        "BG",
                        "GR",
                        "PT",
                        "IE",
                        "DK",
                        "SE",
                        "NO",
                        "FI",
                        "EE",
                        "LV",
                        "LT",
                        "SI",
                        "HR",
                        "RS",
                        "BA",
                        "ME",
                        "MK",
                        "AL",
                        "TR",
                        "CY",
                        "MT",
                        "LU",
                        "LI",
                        "IS",
                        "UA",
                        "MD",
                        "BY",
                        "RU",
                        "GE",
                        "AM",
                        "AZ",
                        "KZ",
                        "UZ",
                        "CA",
                        "MX",
                        "BR",
                    ]
                }
            },
            "geo",
            "at most 50 countries, not 51",
        ),
        ({"utm": {"source": "sms", "campain": "x"}}, "utm.campain", "Extra inputs"),
    ],
)
def test_an_invalid_rule_is_refused_naming_its_field(fields: dict, named: str, says: str) -> None:
    found = _refusal(**fields)
    assert found.startswith(f"{named}: ") or f"; {named}: " in found, found
    assert says in found


def test_country_codes_are_read_in_any_case_and_kept_upper_case() -> None:
    request = ShortenRequest(url="https://example.com/", geo={"de": "https://a.example/"})
    assert request.geo == {"DE": "https://a.example/"}


@pytest.mark.parametrize(
    ("name", "url", "says"),
    [
        ("ios_url", "https://sho.rt/abc", "shortener itself"),
        ("android_url", "javascript:alert(1)", "not allowed"),
        ("ios_url", "https://user:pw@evil.example/", "user name or password"),
    ],
)
def test_a_rule_url_passes_the_checks_of_url_and_is_named_when_refused(
    name: str, url: str, says: str
) -> None:
    request = ShortenRequest.model_validate({"url": "https://example.com/", name: url})
    with pytest.raises(InvalidUrlError) as refused:
        with_normalised_rules(request, POLICY)
    assert refused.value.message.startswith(f"{name}: ") and says in refused.value.message


def test_country_and_variant_urls_are_named_by_their_place() -> None:
    with pytest.raises(InvalidUrlError, match=r"^geo\.FR: "):
        normalise_rules({"geo": {"DE": "https://a.example/", "FR": "ftp://sho.rt/"}}, POLICY)
    request = ShortenRequest.model_validate(
        {
            "url": "https://example.com/",
            "variants": [
                {"url": "https://a.example/", "weight": 50},
                {"url": "https://sho.rt/x", "weight": 50},
            ],
        }
    )
    with pytest.raises(InvalidUrlError, match=r"^variants\.1\.url: "):
        with_normalised_rules(request, POLICY)


def test_rule_urls_are_normalised_as_url_is() -> None:
    request = ShortenRequest.model_validate(
        {
            "url": "https://example.com/",
            "ios_url": "HTTPS://Apps.Apple.COM/app",
            "geo": {"DE": "https://A.example"},
        }
    )
    normalised = with_normalised_rules(request, POLICY)
    assert (normalised.ios_url, normalised.geo) == (
        "https://apps.apple.com/app",
        {"DE": "https://a.example/"},
    )


def test_bulk_cells_are_read_and_a_semicolon_inside_a_url_stays_in_it() -> None:
    cells = {
        "geo": "DE=https://a.example/x;y=1; fr=https://b.example/",
        "variants": "https://a.example/;v=1|50;https://b.example/|50",
        "utm_source": "sms",
        "utm_campaign": "spring",
        "forward_query": "true",
        "ios_url": "https://apps.apple.com/app",
    }
    attributes = attributes_of({}, cells)
    assert attributes is not None
    assert attributes.geo == {"DE": "https://a.example/x;y=1", "FR": "https://b.example/"}
    assert [(v.url, v.weight) for v in attributes.variants or []] == [
        ("https://a.example/;v=1", 50),
        ("https://b.example/", 50),
    ]
    assert attributes.utm is not None and attributes.utm.tags() == {
        "utm_source": "sms",
        "utm_campaign": "spring",
    }
    assert attributes.forward_query is True
    # And a job's defaults (cells again) read back the same
    assert attributes_of(attributes.as_cells(), None) == attributes


@pytest.mark.parametrize(
    ("cells", "says"),
    [
        ({"geo": "DE https://a.example/"}, "DE=https://"),
        ({"variants": "https://a.example/"}, "https://a.example|50;"),
    ],
)
def test_a_malformed_bulk_cell_says_how_to_write_it(cells: dict[str, str], says: str) -> None:
    with pytest.raises(ValidationError) as refused:
        LinkAttributes.model_validate(cells)
    assert says in problems(refused.value)


def test_an_update_can_clear_each_rule_with_null() -> None:
    update = LinkUpdate.model_validate({"geo": None, "variants": None, "utm": None, "forward_query": None})
    assert update.model_fields_set == {"geo", "variants", "utm", "forward_query"}
    with pytest.raises(ValidationError):
        LinkUpdate.model_validate({})


def test_a_link_with_rules_reads_back_as_written_and_a_plain_one_stays_small() -> None:
    request = ShortenRequest.model_validate(
        {
            "url": "https://example.com/",
            "ios_url": "https://apps.apple.com/app",
            "android_url": "https://play.google.com/store/apps/details?id=x",
            "geo": {"DE": "https://example.de/"},
            "variants": [
                {"url": "https://a.example/", "weight": 30},
                {"url": "https://b.example/", "weight": 70},
            ],
            "utm": {"source": "sms", "term": "t"},
            "forward_query": True,
        }
    )
    fields = {
        name: getattr(request, name) for name in ("ios_url", "android_url", "geo", "utm", "forward_query")
    }
    link = Link(
        code="b7Kx2", url=request.url, created_at=CREATED, variants=tuple(request.variants or ()), **fields
    )
    assert link_from_item(link_to_item(link)) == link
    assert link.has_rules and link.varies
    plain = Link(code="b7Kx3", url="https://example.com/", created_at=CREATED)
    assert set(link_to_item(plain)) == {"code", "url", "created_at"}
    assert not plain.has_rules and not plain.varies


def test_utm_alone_does_not_vary_by_visitor() -> None:
    link = Link(code="b7Kx2", url="https://example.com/", created_at=CREATED, utm={"source": "sms"})
    assert link.has_rules and not link.varies


# Where the prod stage caches GET /{code} by its path alone (Stage=prod, Edge=off).
CACHED_BY_PATH = UrlPolicy(
    frozenset({"http", "https"}), 2048, frozenset({"sho.rt"}), answers_each_visitor=False
)


@pytest.mark.parametrize(
    "fields",
    [
        {"ios_url": "https://apps.apple.com/app"},
        {"geo": {"DE": "https://a.example/de"}},
        {
            "variants": [
                {"url": "https://a.example/", "weight": 50},
                {"url": "https://b.example/", "weight": 50},
            ]
        },
        {"forward_query": True},
        {"preview": {"title": "Spring sale"}},
    ],
)
def test_a_stage_that_caches_by_path_refuses_what_answers_each_visitor(fields: dict[str, object]) -> None:
    request = ShortenRequest.model_validate({"url": "https://example.com/", **fields})
    with pytest.raises(AnswersEachVisitorError) as refused:
        with_normalised_rules(request, CACHED_BY_PATH)
    assert refused.value.status_code == 422
    assert refused.value.message.startswith(f"{next(iter(fields))}: ")
    # The same request is fine where nothing caches by path.
    with_normalised_rules(request, POLICY)


@pytest.mark.parametrize(
    "model",
    [
        ShortenRequest.model_validate({"url": "https://example.com/", "utm": {"source": "sms"}}),
        ShortenRequest.model_validate({"url": "https://example.com/", "password": "open sesame"}),
        LinkUpdate.model_validate({"ios_url": None, "forward_query": False, "title": "x"}),
    ],
)
def test_a_stage_that_caches_by_path_takes_what_answers_everyone_alike(model: BaseModel) -> None:
    assert with_normalised_rules(model, CACHED_BY_PATH) == model


def test_a_bulk_row_with_a_rule_fails_on_a_stage_that_caches_by_path() -> None:
    row = LinkAttributes.model_validate({"android_url": "https://play.google.com/x", "utm_source": "sms"})
    with pytest.raises(AnswersEachVisitorError, match=r"^android_url: "):
        with_normalised_rules(row, CACHED_BY_PATH)


def test_the_policy_of_a_stack_with_a_stage_cache_keeps_it_when_hosts_are_added(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("API_CACHE_ENABLED", "true")
    monkeypatch.setenv("LINKS_TABLE", "links")
    policy = WorkerSettings.model_validate(os.environ).url_policy().with_own_host("api.example")
    assert not policy.answers_each_visitor and "api.example" in policy.own_hosts
