"""The collector function under moto: access log batches, as the local stack's log group delivers
them, counted into the clicks table once per batch; no address is stored."""

import json
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import boto3
import pytest

from local_stack.cloudwatch.logs import AccessRecord, FilterPattern, LogGroup, Subscription
from shortener.clicks.model import destination_line
from shortener.clicks.store import ClicksStore
from shortener.links.model import Link
from shortener.links.store import LinksStore
from shortener.settings import collector_settings
from tests.shortener.clicks.test_counting import CHROME_WINDOWS, FORMAT_FIELDS
from tests.support.loops import LambdaContext

pytestmark = pytest.mark.integration

T0 = 1_764_133_200_000  # 2025-11-26T05:00:00Z


def deliveries(records: list[AccessRecord]) -> list[dict[str, Any]]:
    """The subscription events the local log group makes of these requests."""
    events: list[dict[str, Any]] = []
    group = LogGroup(
        "/aws/apigateway/t-access",
        FORMAT_FIELDS,
        [Subscription("clicks", FilterPattern.parse('{ $.resourcePath = "/{code}" }'), "collector")],
        lambda _, event: events.append(event),
    )
    for record in records:
        group.write(record)
    group.flush()
    return events


def follow(
    code: str, agent: str = CHROME_WINDOWS, status: int = 301, at: int = T0, ip: str = "8.8.8.8"
) -> AccessRecord:
    return AccessRecord(
        method="GET",
        path=f"/{code}",
        resource_path="/{code}",
        status=status,
        source_ip=ip,
        user_agent=agent,
        response_length=0,
        api_id="a",
        stage="local",
        domain_name="127.0.0.1",
        epoch_ms=at,
    )


def function_log_group(events: list[dict[str, Any]]) -> LogGroup:
    """The API function's log group, subscribed as the template subscribes it: its deliveries go
    to ``events``."""
    return LogGroup(
        "/aws/lambda/t-ApiFunction",
        "",
        [Subscription("destinations", FilterPattern.parse('{ $.record = "destination" }'), "collector")],
        lambda _, event: events.append(event),
    )


def items(table: str) -> dict[tuple[str, str], dict[str, Any]]:
    found = boto3.client("dynamodb").scan(TableName=table)["Items"]
    return {(item["pk"]["S"], item["sk"]["S"]): item for item in found}


def test_a_batch_is_counted_per_link_hour_with_totals_and_counted_once(
    collector: ModuleType, tables: dict[str, str]
) -> None:
    records = [
        follow("abc"),
        follow("abc", "Twitterbot/1.0"),
        follow("abc", at=T0 + 3_600_000),
        follow("xyz"),
    ]
    [event] = deliveries([*records, follow("abc", status=404)])
    summary = collector.lambda_handler(event, LambdaContext("collector"))
    assert (summary["clicks"], summary["humans"], summary["bots"]) == (4, 3, 1)
    assert summary["skipped"] == {"not_a_redirect": 1} and not summary["already_counted"]
    stored = items(tables["CLICKS_TABLE"])
    hour = stored[("abc", "h#2025-11-26T05")]
    assert (hour["clicks"]["N"], hour["humans"]["N"], hour["bots"]["N"]) == ("2", "1", "1")
    assert hour["country#US"]["N"] == "2" and hour["device#bot"]["N"] == "1"
    # expires ClickRetentionDays (30) after the end of its hour
    assert int(hour["expires_at"]["N"]) == (T0 + 3_600_000) // 1000 + 30 * 86_400
    total = stored[("abc", "total")]
    assert (total["clicks"]["N"], total["humans"]["N"], total["bots"]["N"]) == ("3", "2", "1")
    assert (int(total["first_click"]["N"]), int(total["last_click"]["N"])) == (T0, T0 + 3_600_000)
    assert "expires_at" not in total
    # The same batch delivered again counts nothing
    again = collector.lambda_handler(event, LambdaContext("collector"))
    assert again["already_counted"] and again["items_written"] == 0
    assert items(tables["CLICKS_TABLE"])[("abc", "total")]["clicks"]["N"] == "3"
    # No address anywhere in the click data
    assert "8.8.8.8" not in json.dumps(list(items(tables["CLICKS_TABLE"]).values()))


def test_without_counters_a_batch_writes_only_its_marker_and_counts_once(
    collector: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLICK_COUNTERS", "false")
    collector_settings.cache_clear()
    collector.click_collector.cache_clear()
    [event] = deliveries([follow("abc"), follow("abc", at=T0 + 3_600_000), follow("xyz")])
    first = collector.lambda_handler(event, LambdaContext("collector"))
    assert first["clicks"] == 3 and not first["already_counted"] and first["items_written"] == 0
    [(key, marker)] = items(tables["CLICKS_TABLE"]).items()
    assert key[0].startswith("#batch#") and set(marker) == {"pk", "sk", "expires_at"}
    # Delivered again: known by its marker (click limits are spent once), still nothing counted
    assert collector.lambda_handler(event, LambdaContext("collector"))["already_counted"]
    assert len(items(tables["CLICKS_TABLE"])) == 1


def test_a_big_batch_is_written_in_parts_each_counted_once(
    collector: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shortener.clicks.store.UPDATES_PER_TRANSACTION", 3)
    [event] = deliveries([follow(f"c{number}") for number in range(5)])
    first = collector.lambda_handler(event, LambdaContext("collector"))
    assert first["items_written"] == 10  # 5 link hours and 5 totals, in 4 transactions
    assert collector.lambda_handler(event, LambdaContext("collector"))["already_counted"]
    totals = [item for key, item in items(tables["CLICKS_TABLE"]).items() if key[1] == "total"]
    assert sorted(int(item["clicks"]["N"]) for item in totals) == [1] * 5


def test_a_batch_of_only_junk_writes_nothing(collector: ModuleType, tables: dict[str, str]) -> None:
    [event] = deliveries([follow("abc", agent="z" * 10_000), follow("gone", status=410)])
    summary = collector.lambda_handler(event, LambdaContext("collector"))
    assert summary["clicks"] == 0 and summary["skipped"] == {"malformed": 1, "not_a_redirect": 1}
    assert items(tables["CLICKS_TABLE"]) == {}


def test_the_api_functions_destination_lines_are_counted_once_beside_the_clicks(
    collector: ModuleType, tables: dict[str, str]
) -> None:
    # Given the API function's log group, subscribed as the template subscribes it
    events: list[dict[str, Any]] = []
    group = function_log_group(events)
    at = datetime.fromtimestamp(T0 / 1000, UTC)
    # When the function writes its other lines and two answers of a link
    for written in ['{"level":"INFO","message":"Link created"}', "START RequestId: 1"]:
        group.write_line(written + "\n")
    group.write_line(destination_line("abc", "ios", at) + "\n")
    group.write_line(destination_line("abc", "geo:DE", at) + "\n")
    group.flush()
    [event] = events
    # Then the collector counts them under the link's hour, and a second delivery adds nothing
    summary = collector.lambda_handler(event, LambdaContext("collector"))
    assert (summary["lines"], summary["clicks"], summary["answers"]) == (2, 0, 2)
    assert collector.lambda_handler(event, LambdaContext("collector"))["already_counted"]
    stored = items(tables["CLICKS_TABLE"])
    hour = stored[("abc", "h#2025-11-26T05")]
    assert (hour["destination#ios"]["N"], hour["destination#geo:DE"]["N"], hour["clicks"]["N"]) == (
        "1",
        "1",
        "0",
    )
    # and the link's totals count the answers by rule (the job's click report reads them there),
    # with no click, first or last click: answers alone are no clicks
    total = stored[("abc", "total")]
    assert (total["destination#ios"]["N"], total["destination#geo:DE"]["N"]) == ("1", "1")
    assert not {"clicks", "humans", "first_click", "last_click"} & total.keys()
    totals = ClicksStore(tables["CLICKS_TABLE"]).totals(["abc"])["abc"]
    assert (totals.clicks, totals.first_click, totals.destinations) == (0, None, {"ios": 1, "geo:DE": 1})


def test_each_click_is_sent_as_an_event_with_its_owner_job_and_a_hashed_visitor(
    collector: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a job's link of alice, and the click events' delivery stream to a bucket
    LinksStore(tables["LINKS_TABLE"]).insert(
        Link(
            code="abc",
            url="https://example.com/",
            created_at=datetime(2025, 11, 1, tzinfo=UTC),
            owner="alice",
            job_id="job-1",
        )
    )
    monkeypatch.setenv("CLICK_EVENTS_STREAM", stream_to_bucket("click-events", "events/"))
    collector.click_collector.cache_clear()
    collector_settings.cache_clear()
    # When one visitor follows it twice, a bot once, and another address once
    records = [follow("abc"), follow("abc"), follow("abc", "Twitterbot/1.0"), follow("abc", ip="9.9.9.9")]
    [event] = deliveries(records)
    summary = collector.lambda_handler(event, LambdaContext("collector"))
    # Then four events reach the stream, one per request, with what was counted
    assert summary["events"] == 4
    sent = stored_events()
    assert len(sent) == 4 and len({e["request_id"] for e in sent}) == 4
    assert {(e["code"], e["owner"], e["job_id"], e["status"]) for e in sent} == {
        ("abc", "alice", "job-1", 301)
    }
    assert sorted(e["bot"] for e in sent) == [False, False, False, True]
    assert {e["time"] for e in sent} == {T0}
    # and the same address and agent are one visitor; another agent or address another
    visitors = [e["visitor"] for e in sent]
    assert len(set(visitors)) == 3 and visitors.count(visitors[0]) == 2
    # and no address is in any event
    assert "8.8.8.8" not in json.dumps(sent) and "9.9.9.9" not in json.dumps(sent)
    # When the batch is delivered again, its events are sent again under the same request ids
    collector.lambda_handler(event, LambdaContext("collector"))
    again = stored_events()
    assert len(again) == 8 and {e["request_id"] for e in again} == {e["request_id"] for e in sent}


def stream_to_bucket(name: str, prefix: str) -> str:
    """A delivery stream that writes to the events' bucket under ``prefix`` (moto's Firehose keeps
    the JSON lines as they came): its name."""
    s3 = boto3.client("s3")
    if "click-events-bucket" not in {bucket["Name"] for bucket in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket="click-events-bucket")
    boto3.client("firehose").create_delivery_stream(
        DeliveryStreamName=name,
        ExtendedS3DestinationConfiguration={
            "BucketARN": "arn:aws:s3:::click-events-bucket",
            "RoleARN": "arn:aws:iam::123456789012:role/firehose",
            "Prefix": prefix,
        },
    )
    return name


def stored_events() -> list[dict[str, Any]]:
    s3 = boto3.client("s3")
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket="click-events-bucket").get("Contents", [])]
    bodies = [s3.get_object(Bucket="click-events-bucket", Key=key)["Body"].read() for key in keys]
    lines = b"".join(bodies).splitlines()
    return [json.loads(line) for line in lines]


def test_answers_that_name_their_request_are_sent_for_the_queries_to_join(
    collector: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the answers' delivery stream (moto's Firehose writes the JSON lines to the bucket)
    monkeypatch.setenv("CLICK_ANSWERS_STREAM", stream_to_bucket("click-answers", "answers/"))
    collector.click_collector.cache_clear()
    collector_settings.cache_clear()
    events: list[dict[str, Any]] = []
    group = function_log_group(events)
    at = datetime.fromtimestamp(T0 / 1000, UTC)
    # When the function answers two requests by rules, one of them logged before lines named it
    group.write_line(destination_line("abc", "ios", at, "req-1") + "\n")
    group.write_line(destination_line("abc", "geo:DE", at) + "\n")
    group.flush()
    [event] = events
    collector.lambda_handler(event, LambdaContext("collector"))
    # Then the one that names its request is sent, with its rule, code and time
    assert stored_events() == [{"time": T0, "request_id": "req-1", "code": "abc", "destination": "ios"}]
    # and both are still counted by rule
    hour = items(tables["CLICKS_TABLE"])[("abc", "h#2025-11-26T05")]
    assert (hour["destination#ios"]["N"], hour["destination#geo:DE"]["N"]) == ("1", "1")
