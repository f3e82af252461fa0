"""The tag index backfill under moto: links tagged before the index (written without entries) get
their entries in bounded steps that resume from the saved cursor, so ``?tag=`` lists them; a link
changed while the backfill runs gets no stale entry; a finished backfill writes nothing; and the
restarter's scheduled run does it."""

import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from shortener.links.backfill import ScannedPage, run_backfill
from shortener.links.model import Link
from shortener.links.store_backfill import MIGRATIONS_KEY, TagIndexBackfillStore
from shortener.links.store_changes import LinkChangesStore
from shortener.links.store_items import TAG_PREFIX, link_to_item
from shortener.links.store_listing import LinkIndex
from tests.support.alarms import QUEUE_NAME
from tests.support.loops import FUNCTION_NAME, LambdaContext

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def old_link(code: str, *tags: str, owner: str = "alice", minutes: int = 0) -> Link:
    """A link as written before the tag index: the link's item alone, no entries."""
    link = Link(
        code=code,
        url=f"https://example.com/{code}",
        owner=owner,
        tags=tags,
        created_at=T0 + timedelta(minutes=minutes),
    )
    boto3.client("dynamodb").put_item(TableName=os.environ["LINKS_TABLE"], Item=link_to_item(link))
    return link


def entries() -> set[str]:
    items = boto3.client("dynamodb").scan(TableName=os.environ["LINKS_TABLE"])["Items"]
    return {item["code"]["S"] for item in items if item["code"]["S"].startswith(TAG_PREFIX)}


def listed(tag: str, owner: str | None = "alice") -> list[str]:
    page = LinkIndex(os.environ["LINKS_TABLE"]).list_links(owner, before=None, limit=100, tag=tag)
    return [link.code for link in page.links]


def marker() -> dict[str, Any]:
    return boto3.client("dynamodb").get_item(
        TableName=os.environ["LINKS_TABLE"], Key={"code": {"S": MIGRATIONS_KEY}}, ConsistentRead=True
    )["Item"]


def test_steps_resume_until_every_old_tagged_link_is_listed_and_then_write_nothing(
    tables: dict[str, str],
) -> None:
    # Given twelve old links, eight of them tagged (one of bob's), and a deleted tagged one
    spring = [old_link(f"s{n}", "spring", minutes=n).code for n in range(6)]
    both = old_link("both", "spring", "sale", minutes=10).code
    bob = old_link("bob1", "spring", owner="bob").code
    for n in range(4):
        old_link(f"plain{n}")
    gone = Link(code="gone", url="https://example.com/gone", owner="alice", tags=("spring",), created_at=T0)
    boto3.client("dynamodb").put_item(
        TableName=tables["LINKS_TABLE"], Item=link_to_item(gone.model_copy(update={"status": "deleted"}))
    )
    assert listed("spring") == [] and entries() == set()
    # When the backfill runs in steps of one 4-item page each, its wait after the upgrade over
    store = TagIndexBackfillStore(tables["LINKS_TABLE"], page_size=4)
    assert run_backfill(store, 0.0).pages == []
    assert "tag_index_since" in marker()
    runs = []
    for _ in range(10):
        runs.append(run_backfill(store, 0.0, wait=timedelta(0)))
        if runs[-1].done:
            break
    # Then it took several runs, each going on from the last, and ended done
    assert len(runs) >= 3 and all(len(run.pages) == 1 for run in runs)
    assert runs[-1].done and not any(run.done for run in runs[:-1])
    # And the tag listings find every old tagged link, newest first, and nothing else
    assert listed("spring") == [both, *reversed(spring)]
    assert listed("sale") == [both]
    assert listed("spring", owner=None).count(bob) == 1
    assert sum(run.entries_written for run in runs) == len(entries()) == 9
    # And the marker says done, with what it read and wrote
    saved = marker()
    assert saved["tag_index"]["S"] == "done" and "tag_index_after" not in saved
    assert saved["tag_index_written"]["N"] == "9"
    # And another run costs one read and writes nothing
    again = run_backfill(store, 10.0)
    assert again.done and again.pages == [] and len(entries()) == 9


def test_a_rescan_writes_nothing_for_links_that_have_their_entries(tables: dict[str, str]) -> None:
    # Given old links backfilled once, and the marker lost (a crash before its save, say)
    for n in range(5):
        old_link(f"x{n}", "spring", minutes=n)
    store = TagIndexBackfillStore(tables["LINKS_TABLE"])
    store.begin(datetime.now(UTC) - timedelta(hours=1))
    assert run_backfill(store, 10.0).entries_written == 5
    boto3.client("dynamodb").delete_item(TableName=tables["LINKS_TABLE"], Key={"code": {"S": MIGRATIONS_KEY}})
    # When the scan runs again from the start
    store.begin(datetime.now(UTC) - timedelta(hours=1))
    report = run_backfill(store, 10.0)
    # Then it finds every entry present and writes none
    assert report.done and report.entries_written == 0 and report.pages[0].tagged_links == 5


class ChangedWhileRead(TagIndexBackfillStore):
    """Changes a link (through the real change path) right after the page that holds it is read."""

    def __init__(self, table_name: str, seen: Link, changed: Link) -> None:
        super().__init__(table_name)
        self.seen, self.changed = seen, changed

    def scan_tagged(self, after: str | None) -> ScannedPage:
        page = super().scan_tagged(after)
        LinkChangesStore(self.table_name).replace(self.seen, self.changed, drop_claim=None, takedown=False)
        return page


def test_a_link_whose_tags_changed_after_the_read_gets_no_stale_entry(tables: dict[str, str]) -> None:
    # Given an old link tagged spring, and another
    seen = old_link("moved", "spring")
    kept = old_link("kept", "spring", minutes=1).code
    # When its tags become autumn after the backfill read it as spring
    changed = seen.model_copy(update={"tags": ("autumn",), "updated_at": T0 + timedelta(days=1)})
    store = ChangedWhileRead(tables["LINKS_TABLE"], seen, changed)
    store.begin(datetime.now(UTC) - timedelta(hours=1))
    report = run_backfill(store, 10.0)
    # Then the backfill skipped it (its change wrote its entries), and no spring entry names it
    assert report.done and report.pages[0].links_changed == 1 and report.entries_written == 1
    assert listed("spring") == [kept]
    assert listed("autumn") == ["moved"]
    assert len(entries()) == 2


def test_the_restarters_scheduled_run_backfills(
    tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an old tagged link, an upgrade long enough ago, and the restarter's settings
    boto3.client("sqs").create_queue(QueueName=QUEUE_NAME)
    code = old_link("old1", "spring").code
    TagIndexBackfillStore(tables["LINKS_TABLE"]).begin(datetime.now(UTC) - timedelta(hours=1))
    for name, value in {
        "POWERTOOLS_SERVICE_NAME": "restarter",
        "LOOP_FUNCTIONS": json.dumps({QUEUE_NAME: FUNCTION_NAME}),
        "MIN_LOOPS": "0",
        "MAX_LOOPS": "1",
        "MESSAGES_PER_LOOP": "10",
    }.items():
        monkeypatch.setenv(name, value)
    from functions.restarter import app
    from shortener.services import restarter as services

    monkeypatch.setattr(app.metrics, "namespace", "BulkShortenerTests")
    for builder in (services.tokens, services.scaler, services.targets, services.dead_letters):
        builder.cache_clear()
    services.tag_backfill.cache_clear()
    # When the schedule runs it twice
    event = {"source": "aws.events", "detail-type": "Scheduled Event"}
    first = app.lambda_handler(event, LambdaContext("restarter"))
    second = app.lambda_handler(event, LambdaContext("restarter"))
    # Then the first run indexed the link and finished; the second did nothing more
    assert first["tag_backfill"] == {"done": True, "items_read": 2, "entries_written": 1}
    assert second["tag_backfill"] is None
    assert listed("spring") == [code]
