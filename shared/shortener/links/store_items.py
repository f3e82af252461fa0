"""How links and the links table's internal items are stored: one item per code, plus the id
counter, find-if-exists claims, reserved ids and the takedown generation. "#" never appears in a
code, so internal keys cannot clash with links.

Links with an owner carry the keys of the ByOwner index (``list_pk`` = owner and a shard number,
``list_sk`` = creation time and code); no internal item does, so the index holds links only. An
indexed link also carries ``words`` (its search words, shortener.links.search), so that DynamoDB
filters a search. The partition is split in LIST_SHARDS because a bulk upload writes one owner's
links faster than one index partition takes writes (about 1,000 a second; DynamoDB's "write
sharding" advice,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-sharding.html).

LIST_SHARDS is twice what a new on-demand table takes (4,000 write units a second, each bulk link
one in the table and one in the index): with only as many shards as the table's rate, random
unevenness between them throttles the index before the table is full. It may grow, never shrink: a
listing reads shards 0 to LIST_SHARDS - 1, so links written under a smaller count still list (and
move to their new shard when next written), with no migration.

An active link with an ``expires_at`` also carries the keys of the sparse ByExpiry index
(``expiry_pk`` = a shard number, ``expiry_sk`` = the expiry in UTC, fixed width so that text order
is time order) until the expirer has refreshed its stage cache entry (shortener.links.expiry): the
index holds only the expiries still to enforce, so the expirer's idle run reads nothing. Sharded
for the same reason as ByOwner: one bulk job may write a million links with the same expiry."""

import hashlib
import zlib
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from typing import Any

from shortener.links.model import Link, Preview
from shortener.links.rules_model import Utm, Variant
from shortener.links.search import search_text

COUNTER_KEY = "#id-counter"
CLAIM_PREFIX = "#url#"
RESERVED_PREFIX = "#reserved#"
TAKEDOWNS_KEY = "#takedowns"
TAG_PREFIX = "#tag#"
LIST_INDEX = "ByOwner"
LIST_SHARDS = 8
EXPIRY_INDEX = "ByExpiry"
EXPIRY_SHARDS = 16


def list_partition(owner: str, shard: int) -> str:
    return f"{owner}#{shard}"


def tag_partition(tag: str, shard: int) -> str:
    """The ByOwner partition of a tag (the tag index: shortener.links.store_listing reads it),
    sharded as an owner's links are; every owner's links with the tag, each under its owner
    (``tag_sort_key``). The digest keeps any tag's partition apart from an owner's ("#" is in no
    owner id)."""
    return f"{TAG_PREFIX}{_tag_digest(tag)}#{shard}"


def tag_sort_key(owner: str, position: str) -> str:
    """An entry's sort key: its owner, then its link's position (an owner's entries are one range,
    newest last; "#" sorts below every character of an owner id, so no owner's range holds
    another's)."""
    return f"{owner}#{position}"


def _tag_digest(tag: str) -> str:
    return hashlib.sha256(tag.encode()).hexdigest()[:32]


def tag_key(tag: str, code: str) -> dict[str, Any]:
    return {"code": {"S": f"{TAG_PREFIX}{_tag_digest(tag)}#{code}"}}


def indexed_tags(link: Link) -> tuple[str, ...]:
    """The tags ``link`` has an entry of the tag index for: none unless it is owned and not deleted."""
    return link.tags if link.owner and link.status != "deleted" else ()


def tag_items(link: Link) -> list[dict[str, Any]]:
    """The tag index's entries of ``link``: one small item per tag, in the ByOwner index under the
    tag's partition at its owner and its position, so a tag listing reads only the tagged links
    (and pages like the owner's listing), and an admin's batch by tag reads every owner's. Writing
    one again changes nothing (a redelivered bulk write); an entry whose link lost the tag is
    skipped on read."""
    tags = indexed_tags(link)
    if not tags:
        return []
    assert link.owner is not None
    position = _position(_timestamp(link.created_at, link.created_at.tzinfo), link.code)
    shard = shard_of(link.code)
    return [
        {
            **tag_key(tag, link.code),
            "target": {"S": link.code},
            "list_pk": {"S": tag_partition(tag, shard)},
            "list_sk": {"S": tag_sort_key(link.owner, position)},
        }
        for tag in tags
    ]


def list_position(link: Link) -> str:
    """The link's place in its owner's listing: newest first sorts by this, descending."""
    return _position(_timestamp(link.created_at, link.created_at.tzinfo), link.code)


def _position(created_at: str, code: str) -> str:
    return f"{created_at}#{code}"


@lru_cache(maxsize=64)
def _timestamp(moment: datetime, _zone: tzinfo | None) -> str:
    """``moment.isoformat()``, remembered: every link of a bulk chunk has the same creation time,
    and formatting it was a microsecond a time, twice a link (make bench ARGS=cpu). Keyed by the
    zone too: equal moments in other zones are written otherwise."""
    return moment.isoformat()


def shard_of(code: str) -> int:
    return zlib.crc32(code.encode()) % LIST_SHARDS


def expiry_shard_of(code: str) -> int:
    return zlib.crc32(code.encode()) % EXPIRY_SHARDS


def expiry_position(moment: datetime) -> str:
    """``moment`` in UTC as fixed-width text (microseconds always written): ByExpiry's sort key."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def link_to_item(link: Link) -> dict[str, Any]:
    created_at = _timestamp(link.created_at, link.created_at.tzinfo)
    item: dict[str, Any] = {
        "code": {"S": link.code},
        "url": {"S": link.url},
        "created_at": {"S": created_at},
    }
    # Only custom codes say so: a generated link (every bulk row) is smaller and cheaper to build
    # without it, and link_from_item reads a missing flag as False.
    if link.is_custom:
        item["is_custom"] = {"BOOL": True}
    if link.owner:
        item["owner"] = {"S": link.owner}
        if link.status != "deleted":
            item["list_pk"] = {"S": list_partition(link.owner, shard_of(link.code))}
            item["list_sk"] = {"S": _position(created_at, link.code)}
            # What a search filters by (shortener.links.search): in the index with the link.
            item["words"] = {"S": search_text(link)}
    if link.title:
        item["title"] = {"S": link.title}
    if link.tags:
        item["tags"] = {"SS": list(link.tags)}
    if link.status != "active":
        item["status"] = {"S": link.status}
    if link.updated_at is not None:
        item["updated_at"] = {"S": link.updated_at.isoformat()}
    item.update(_job_attributes(link))
    if link.domain is not None:
        item["domain"] = {"S": link.domain}
    if link.expires_at is not None:
        item["expires_at"] = {"S": link.expires_at.isoformat()}
        if link.status == "active":
            item["expiry_pk"] = {"S": str(expiry_shard_of(link.code))}
            item["expiry_sk"] = {"S": expiry_position(link.expires_at)}
    if link.max_clicks is not None:
        item["max_clicks"] = {"N": str(link.max_clicks)}
        item["clicks"] = {"N": str(link.clicks)}
        if link.served:
            item["served"] = {"N": str(link.served)}
    _rules_to_item(link, item)
    item.update(_protection_attributes(link))
    return item


def _job_attributes(link: Link) -> dict[str, Any]:
    """The bulk job and row a link came from, where it did."""
    attributes: dict[str, Any] = {}
    if link.job_id:
        attributes["job_id"] = {"S": link.job_id}
    if link.row is not None:
        attributes["row"] = {"N": str(link.row)}
    return attributes


def _rules_to_item(link: Link, item: dict[str, Any]) -> None:
    # Only the rules a link has: a plain link's item (every bulk row's) stays as small as before.
    if link.ios_url:
        item["ios_url"] = {"S": link.ios_url}
    if link.android_url:
        item["android_url"] = {"S": link.android_url}
    if link.geo:
        item["geo"] = {"M": {country: {"S": url} for country, url in link.geo.items()}}
    if link.variants:
        item["variants"] = {
            "L": [{"M": {"url": {"S": v.url}, "weight": {"N": str(v.weight)}}} for v in link.variants]
        }
    if link.utm is not None and (tags := link.utm.tags()):
        item["utm"] = {"M": {name.removeprefix("utm_"): {"S": value} for name, value in tags.items()}}
    if link.forward_query:
        item["forward_query"] = {"BOOL": True}


def _rules_from_item(item: dict[str, Any]) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    if "ios_url" in item:
        rules["ios_url"] = item["ios_url"]["S"]
    if "android_url" in item:
        rules["android_url"] = item["android_url"]["S"]
    if "geo" in item:
        rules["geo"] = {country: url["S"] for country, url in item["geo"]["M"].items()}
    if "variants" in item:
        rules["variants"] = tuple(
            Variant.model_construct(url=v["M"]["url"]["S"], weight=int(v["M"]["weight"]["N"]))
            for v in item["variants"]["L"]
        )
    if "utm" in item:
        rules["utm"] = Utm.model_construct(**{name: value["S"] for name, value in item["utm"]["M"].items()})
    if "forward_query" in item:
        rules["forward_query"] = item["forward_query"]["BOOL"]
    return rules


def _protection_attributes(link: Link) -> dict[str, Any]:
    """A password link's hash, a preview link's preview (shortener.links.protection)."""
    attributes: dict[str, Any] = {}
    if link.password_hash is not None:
        attributes["password_hash"] = {"S": link.password_hash}
    if link.preview is not None:
        attributes["preview"] = {"M": {name: {"S": value} for name, value in link.preview if value}}
    return attributes


def link_from_item(item: dict[str, Any]) -> Link:
    updated_at = item.get("updated_at", {}).get("S")
    expires_at = item.get("expires_at", {}).get("S")
    max_clicks = item.get("max_clicks", {}).get("N")
    preview = item.get("preview", {}).get("M")
    return Link(
        code=item["code"]["S"],
        url=item["url"]["S"],
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
        is_custom=item.get("is_custom", {}).get("BOOL", False),
        owner=item.get("owner", {}).get("S"),
        title=item.get("title", {}).get("S", ""),
        tags=tuple(sorted(item.get("tags", {}).get("SS", []))),
        status=item.get("status", {}).get("S", "active"),
        updated_at=datetime.fromisoformat(updated_at) if updated_at else None,
        job_id=item.get("job_id", {}).get("S"),
        row=int(item["row"]["N"]) if "row" in item else None,
        expires_at=datetime.fromisoformat(expires_at) if expires_at else None,
        max_clicks=int(max_clicks) if max_clicks else None,
        clicks=int(item.get("clicks", {}).get("N", "0")) if max_clicks else 0,
        served=int(item.get("served", {}).get("N", "0")) if max_clicks else 0,
        **(_rules_from_item(item) if _RULE_KEYS & item.keys() else {}),
        password_hash=item.get("password_hash", {}).get("S"),
        domain=item.get("domain", {}).get("S"),
        # Read as stored: validated when it was written.
        preview=Preview.model_construct(**{name: value["S"] for name, value in preview.items()})
        if preview
        else None,
    )


_RULE_KEYS = frozenset({"ios_url", "android_url", "geo", "variants", "utm", "forward_query"})


def is_link_item(item: dict[str, Any] | None) -> bool:
    """Whether ``item`` is a link (a tombstone included), not one of the table's internal items."""
    return item is not None and "url" in item and not item["code"]["S"].startswith("#")


def claim_item(key: str, link: Link) -> dict[str, Any]:
    """The find-if-exists claim that makes ``link`` the one generated link of its URL (per owner)."""
    item = {
        "code": {"S": CLAIM_PREFIX + key},
        "target": {"S": link.code},
        "url": {"S": link.url},
        "created_at": {"S": link.created_at.isoformat()},
    }
    if link.owner:
        item["owner"] = {"S": link.owner}
    return item


def claim_to_link(item: dict[str, Any]) -> Link:
    return Link(
        code=item["target"]["S"],
        url=item["url"]["S"],
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
        owner=item.get("owner", {}).get("S"),
    )
