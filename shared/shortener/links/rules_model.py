"""A link's rules: where a visitor goes by device (``ios_url``, ``android_url``), by country
(``geo``), by a weighted draw (``variants``), with which UTM tags (``utm``) and whether the short
URL's own query travels on (``forward_query``). The decision is shortener.links.targeting; the
fields here are what a request, a bulk row and a stored link carry (docs/api.md, "Link rules").

Each rule URL is checked as ``url`` is (schemes, own host, user info, blocklist) where the link
is made or changed (``normalise_rules``): the model alone does not know the stack's URL policy."""

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, model_validator

from shortener.exceptions import AnswersEachVisitorError, InvalidUrlError
from shortener.links.countries import COUNTRY_CODES
from shortener.links.urls import UrlPolicy, normalise_url
from shortener.request_model import RequestModel

MAX_COUNTRIES = 50
MAX_VARIANTS = 10
MAX_URL_LENGTH = 32768
MAX_UTM_LENGTH = 200
UTM_TAGS = ("source", "medium", "campaign", "term", "content")
# A bulk file's columns for ``utm``: one per tag.
UTM_COLUMNS = tuple(f"utm_{tag}" for tag in UTM_TAGS)
# The fields whose answer depends on the visitor (or on the request's own query): such a link is
# answered 302 with ``Cache-Control: private, no-store``. ``utm`` alone does not: its answer is
# the same for everyone, so it stays on the cacheable path.
# The rule fields of a link, as requests, stored links and views name them.
RULE_FIELDS = ("ios_url", "android_url", "geo", "variants", "utm", "forward_query")
VISITOR_RULES = ("ios_url", "android_url", "geo", "variants", "forward_query")

RuleUrl = Annotated[str, Field(min_length=1, max_length=MAX_URL_LENGTH)]
# In a CSV cell: entries split at ";" only where the next entry starts ("DE=", or after "|50"), so
# a ";" inside a URL stays in it.
_GEO_SPLIT = re.compile(r";(?=\s*[A-Za-z]{2}\s*=)")


def _country(code: str) -> str:
    upper = code.strip().upper()
    if upper not in COUNTRY_CODES:
        raise ValueError(f"'{code[:8]}' is not an ISO 3166-1 alpha-2 country code (such as DE, FR, US)")
    return upper


def _geo_cell(value: object) -> object:
    if not isinstance(value, str):
        return value
    entries: dict[str, str] = {}
    for part in _GEO_SPLIT.split(value.strip()):
        if not part.strip():
            continue
        country, separator, url = part.partition("=")
        if not separator:
            raise ValueError("write countries as DE=https://...;FR=https://...")
        entries[country.strip()] = url.strip()
    return entries


def _geo(entries: dict[str, str]) -> dict[str, str] | None:
    if len(entries) > MAX_COUNTRIES:
        raise ValueError(f"at most {MAX_COUNTRIES} countries, not {len(entries)}")
    return {_country(country): url for country, url in entries.items()} or None


def _whole_number(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("must be a whole number")
    return value


class Variant(RequestModel):
    """One destination of an A/B split and its share of the visitors in percent."""

    url: RuleUrl
    weight: Annotated[int, BeforeValidator(_whole_number), Field(ge=1, le=100)]


def _variants_cell(value: object) -> object:
    if not isinstance(value, str):
        return value
    parts = [part for part in re.split(r"(?<=\|\d);|(?<=\|\d\d);|(?<=\|\d\d\d);", value.strip()) if part]
    variants = []
    for part in parts:
        url, separator, weight = part.strip().rpartition("|")
        if not separator:
            raise ValueError("write variants as https://a.example|50;https://b.example|50")
        variants.append({"url": url.strip(), "weight": weight.strip()})
    return variants


def _variants(variants: list[Variant]) -> list[Variant] | None:
    if not variants:
        return None
    total = sum(variant.weight for variant in variants)
    if total != 100:
        raise ValueError(f"the weights must sum to 100, not {total}")
    return variants


class Utm(RequestModel):
    """UTM tags added to the destination's query (each replaces the destination's own)."""

    source: str | None = Field(default=None, max_length=MAX_UTM_LENGTH)
    medium: str | None = Field(default=None, max_length=MAX_UTM_LENGTH)
    campaign: str | None = Field(default=None, max_length=MAX_UTM_LENGTH)
    term: str | None = Field(default=None, max_length=MAX_UTM_LENGTH)
    content: str | None = Field(default=None, max_length=MAX_UTM_LENGTH)

    def tags(self) -> dict[str, str]:
        """The tags given, as query parameters (``utm_source``, ...)."""
        return {f"utm_{tag}": value for tag in UTM_TAGS if (value := getattr(self, tag))}


def _utm(utm: Utm) -> Utm | None:
    return utm if utm.tags() else None


Geo = Annotated[
    dict[str, RuleUrl], BeforeValidator(_geo_cell), Field(json_schema_extra={"maxProperties": MAX_COUNTRIES})
]
Variants = Annotated[
    list[Variant], BeforeValidator(_variants_cell), Field(max_length=MAX_VARIANTS), AfterValidator(_variants)
]


class LinkRules(RequestModel):
    """Where each visitor goes (precedence: device, then country, then variants, then ``url``;
    UTM tags on whatever wins). Null or absent: no such rule."""

    ios_url: RuleUrl | None = Field(default=None, description="Where iPhones and iPads go")
    android_url: RuleUrl | None = Field(default=None, description="Where Android devices go")
    geo: Annotated[Geo, AfterValidator(_geo)] | None = Field(
        default=None,
        description=f"Country (ISO 3166-1 alpha-2) to URL, at most {MAX_COUNTRIES}; after the device rules",
        examples=[{"DE": "https://shop.example/de"}],
    )
    variants: Variants | None = Field(
        default=None,
        description=(
            f"An A/B split: at most {MAX_VARIANTS} URLs with weights 1-100 summing to 100; each request "
            "draws anew (no cookie); after the device and country rules"
        ),
    )
    utm: Annotated[Utm, AfterValidator(_utm)] | None = Field(
        default=None, description="UTM tags merged into the query of whichever destination answers"
    )
    forward_query: bool = Field(
        default=False, description="Pass the short URL's own query string on to the destination"
    )

    @property
    def has_rule_urls(self) -> bool:
        return any(getattr(self, name) for name in ("ios_url", "android_url", "geo", "variants"))

    @model_validator(mode="before")
    @classmethod
    def _utm_columns(cls, data: Any) -> Any:
        # A bulk file (and a job's defaults) give the tags as utm_source ... utm_content.
        if not isinstance(data, dict) or not any(column in data for column in UTM_COLUMNS):
            return data
        fields = {name: value for name, value in data.items() if name not in UTM_COLUMNS}
        fields["utm"] = {
            column.removeprefix("utm_"): data[column] for column in UTM_COLUMNS if column in data
        }
        return fields


class VariantView(BaseModel):
    """A variant as views show it."""

    url: str
    weight: int


class UtmView(BaseModel):
    """The UTM tags as views show them."""

    source: str | None = None
    medium: str | None = None
    campaign: str | None = None
    term: str | None = None
    content: str | None = None


class StoredRules(BaseModel):
    """The rules as ``Link`` keeps them."""

    ios_url: str | None = None
    android_url: str | None = None
    geo: dict[str, str] | None = None
    variants: tuple[Variant, ...] | None = None
    utm: Utm | None = None
    forward_query: bool = False

    @property
    def has_rules(self) -> bool:
        """Whether any rule is set: such a link is one of its own, never found by its URL."""
        return any(getattr(self, name) for name in RULE_FIELDS)

    def same_rules(self, other: "StoredRules") -> bool:
        return all(getattr(self, name) == getattr(other, name) for name in RULE_FIELDS)

    @property
    def varies(self) -> bool:
        """Whether the answer depends on the visitor or the request (never cached for another)."""
        return any(getattr(self, name) for name in VISITOR_RULES)


def rule_urls(fields: dict[str, Any]) -> list[tuple[str, str]]:
    """Every rule URL in ``fields`` (a link's rule fields) with the field that names it."""
    found: list[tuple[str, str]] = []
    for name in ("ios_url", "android_url"):
        if fields.get(name):
            found.append((name, fields[name]))
    for country, url in (fields.get("geo") or {}).items():
        found.append((f"geo.{country}", url))
    for index, variant in enumerate(fields.get("variants") or ()):
        found.append((f"variants.{index}.url", variant.url))
    return found


def normalise_rules(fields: dict[str, Any], policy: UrlPolicy) -> dict[str, Any]:
    """``fields`` (a link's fields) with each rule URL normalised as ``url`` is, or InvalidUrlError
    naming the field whose URL is refused (nothing is written then)."""
    if not any(fields.get(name) for name in ("ios_url", "android_url", "geo", "variants")):
        return fields
    normalised = dict(fields)

    def check(name: str, url: str) -> str:
        try:
            return normalise_url(url, policy)
        except InvalidUrlError as exc:
            raise InvalidUrlError(f"{name}: {exc.message}") from exc

    for name in ("ios_url", "android_url"):
        if normalised.get(name):
            normalised[name] = check(name, normalised[name])
    if normalised.get("geo"):
        normalised["geo"] = {
            country: check(f"geo.{country}", url) for country, url in normalised["geo"].items()
        }
    if normalised.get("variants"):
        normalised["variants"] = tuple(
            variant.model_copy(update={"url": check(f"variants.{index}.url", variant.url)})
            for index, variant in enumerate(normalised["variants"])
        )
    return normalised


def with_normalised_rules[M: BaseModel](model: M, policy: UrlPolicy) -> M:
    """``model`` (a request, a bulk row's attributes, an update) with its rule URLs normalised
    (``normalise_rules``); AnswersEachVisitorError where the policy cannot answer each visitor
    and ``model`` sets what would need it."""
    if not policy.answers_each_visitor:
        _refuse_answers_per_visitor(model)
    fields = {name: getattr(model, name) for name in RULE_FIELDS if name in type(model).model_fields}
    normalised = normalise_rules(fields, policy)
    if normalised is fields:
        return model
    # Only the URLs given: a copy marks what it updates as set, and an update's unset rule is
    # left alone (not cleared).
    return model.model_copy(update={name: value for name, value in normalised.items() if value})


def rules_view(rules: StoredRules) -> dict[str, Any]:
    """``rules`` as a view's fields (its own answer models, apart from the strict request ones)."""
    return {
        "ios_url": rules.ios_url,
        "android_url": rules.android_url,
        "geo": rules.geo,
        "variants": None
        if rules.variants is None
        else [VariantView(url=v.url, weight=v.weight) for v in rules.variants],
        "utm": None if rules.utm is None else UtmView(**rules.utm.model_dump()),
        "forward_query": rules.forward_query,
    }


def _refuse_answers_per_visitor(model: BaseModel) -> None:
    # A password alone is fine: every visitor gets the same page, and its form's POST is not cached.
    varying = [name for name in (*VISITOR_RULES, "preview") if getattr(model, name, None)]
    if varying:
        raise AnswersEachVisitorError(
            f"{', '.join(varying)}: this stack's prod stage caches each short link's answer by its "
            "path alone (Stage=prod, Edge=off), so every visitor would get the first one's answer. "
            "Links that answer each visitor need the edge (Edge=on) or a stage without the cache."
        )
