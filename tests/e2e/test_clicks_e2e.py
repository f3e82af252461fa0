"""Clicks end to end on the local stack: follows of a link leave access log lines, the log group's
subscription delivers them to the collector in batches, and the clicks table counts them: bots
apart from humans, the prod stage cache's answers included, a batch delivered twice counted once,
and no answered click lost to a kill -9."""

import csv
import io
import json
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from shortener.clicks.event_queries import EXPORT_COLUMNS
from shortener.webhooks.signing import verify
from tests.e2e.conftest import RunningStack, StartStack, http_request
from tests.e2e.test_access_e2e import create_key, shortener
from tests.support.webhooks import webhook_receiver

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36"
)
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1"
)
PREVIEW_FETCHERS = (
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "Twitterbot/1.0",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
)


def follow_ten_times(stack: RunningStack, code: str) -> None:
    """7 follows by a browser (with a referrer) and 3 by link-preview fetchers."""
    for _ in range(7):
        headers = {"User-Agent": BROWSER, "Referer": "https://news.example.com/post"}
        assert stack.request("GET", code, headers=headers, api_key=None).status == 301
    for agent in PREVIEW_FETCHERS:
        assert stack.request("GET", code, headers={"User-Agent": agent}, api_key=None).status == 301


def totals(stack: RunningStack, code: str) -> dict[str, int]:
    """The link's clicks over the last 30 days, as GET /links/{code}/clicks reads them."""
    answer = stack.request("GET", f"links/{code}/clicks")
    assert answer.status == 200, answer.text
    report: dict[str, Any] = answer.json()
    return {"clicks": report["total"], "humans": report["humans"], "bots": report["bots"]}


def wait_for_totals(
    stack: RunningStack, code: str, expected: dict[str, int], seconds: float
) -> dict[str, int]:
    deadline = time.monotonic() + seconds
    while True:
        found = totals(stack, code)
        if found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_ten_follows_count_ten_clicks_seven_humans_three_bots(stack: RunningStack) -> None:
    created = stack.post_json("/", {"url": "https://example.com/e2e/clicks", "code": "e2e-clicks"})
    assert created.status == 201, created.text
    follow_ten_times(stack, "e2e-clicks")
    # Then within 90 s the link reads 10 clicks, 7 humans, 3 bots
    assert wait_for_totals(stack, "e2e-clicks", {"clicks": 10, "humans": 7, "bots": 3}, 90) == {
        "clicks": 10,
        "humans": 7,
        "bots": 3,
    }
    # A missing link's 404s are no clicks; an unknown code has no report either
    assert stack.request("GET", "e2e-no-such-code", api_key=None).status == 404
    assert stack.request("GET", "links/e2e-no-such-code/clicks").status == 404
    # The report came from the click events: by default no counter is written, only batch markers
    table = stack.resources["ClicksTable"]
    items = stack.boto3_client("dynamodb").scan(TableName=table, ProjectionExpression="pk, sk")["Items"]
    assert not [item for item in items if item["pk"]["S"] == "e2e-clicks"]
    assert any(item["pk"]["S"].startswith("#batch#") for item in items)


def stored_events(stack: RunningStack, code: str) -> list[dict[str, Any]]:
    """The link's click events in the event store's Parquet files (the embedded S3), read by DuckDB."""
    s3, bucket = stack.boto3_client("s3"), stack.resources["ClickEventsBucket"]
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix="events/").get("Contents", [])]
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for number, key in enumerate(keys):
            files.append(Path(folder, f"{number}.parquet"))
            files[-1].write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        if not files:
            return []
        found = duckdb.connect().execute(
            "SELECT * FROM read_parquet(?, hive_partitioning = false) WHERE code = ?",
            [[str(f) for f in files], code],
        )
        names = [column[0] for column in found.description]
        return [dict(zip(names, row, strict=True)) for row in found.fetchall()]


def test_each_redirect_is_kept_as_an_event_with_a_daily_visitor_and_no_address(stack: RunningStack) -> None:
    # Given a link followed 3 times by each of 3 user agents from one address
    created = stack.post_json("/", {"url": "https://example.com/e2e/events", "code": "e2e-events"})
    assert created.status == 201, created.text
    for agent in [BROWSER, IPHONE, FIREFOX] * 3:
        assert stack.request("GET", "e2e-events", headers={"User-Agent": agent}, api_key=None).status == 301
    # Then within 60 s the event store holds 9 events, one per request, of 3 visitors
    deadline = time.monotonic() + 60
    while len(events := stored_events(stack, "e2e-events")) < 9 and time.monotonic() < deadline:
        time.sleep(1)
    assert len(events) == 9 and len({event["request_id"] for event in events}) == 9, events
    assert len({event["visitor"] for event in events}) == 3
    assert {(event["owner"], event["status"], event["bot"]) for event in events} == {
        ("local-admin", 301, False)
    }
    assert {event["browser"] for event in events} >= {"Chrome", "Firefox"}
    # and no event holds the client's address
    assert "127.0.0.1" not in repr(events)


def report_of(stack: RunningStack, path: str, api_key: str | None = None) -> dict[str, Any]:
    answer = stack.request("GET", path, **({"api_key": api_key} if api_key else {}))
    assert answer.status == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def export_file(stack: RunningStack, query: str, api_key: str | None = None) -> bytes:
    """GET /clicks/export asked until it answers 303, then its file fetched with no key."""
    keyed = {"api_key": api_key} if api_key else {}
    deadline = time.monotonic() + 60
    while (answer := stack.request("GET", f"clicks/export?{query}", **keyed)).status == 202:
        assert int(answer.headers["Retry-After"]) > 0
        assert time.monotonic() < deadline, answer.text
        time.sleep(1)
    assert answer.status == 303, answer.text
    with urllib.request.urlopen(answer.headers["Location"], timeout=30) as file:
        return bytes(file.read())


def export_lines(stack: RunningStack, query: str, api_key: str | None = None) -> list[dict[str, str]]:
    """The CSV export's lines, its header the contract's to the letter."""
    text = export_file(stack, query, api_key).decode()
    assert text.splitlines()[0] == ",".join(EXPORT_COLUMNS)
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.e2e_timeout(300)
def test_nine_visits_by_three_agents_are_nine_clicks_of_three_visitors_every_way_they_are_asked(
    stack: RunningStack,
) -> None:
    # Given a link visited by 3 different user agents 3 times each
    created = stack.post_json("/", {"url": "https://example.com/e2e/visitors", "code": "e2e-visitors"})
    assert created.status == 201, created.text
    agents = [BROWSER, IPHONE, FIREFOX]
    for agent in agents * 3:
        assert stack.request("GET", "e2e-visitors", headers={"User-Agent": agent}, api_key=None).status == 301
    # Then within 60 s its report reads 9 clicks of 3 visitors
    deadline = time.monotonic() + 60
    while (found := report_of(stack, "links/e2e-visitors/clicks"))["visitors"] != 3 or found["total"] != 9:
        assert time.monotonic() < deadline, found
        time.sleep(1)
    # and a range wholly in the future reads nothing
    future = report_of(stack, "links/e2e-visitors/clicks?from=2099-01-01&to=2099-01-31")
    assert (future["total"], future["visitors"]) == (0, 0)
    # and group_by=browser splits the 9 clicks by browser, one visitor each, in Berlin's weeks too
    grouped = report_of(stack, "links/e2e-visitors/clicks?group_by=browser&tz=Europe/Berlin&interval=week")
    assert (grouped["total"], grouped["visitors"], grouped["tz"]) == (9, 3, "Europe/Berlin")
    assert sorted((g["clicks"], g["visitors"]) for g in grouped["groups"]) == [(3, 1), (3, 1), (3, 1)]
    assert {g["value"] for g in grouped["groups"]} >= {"Chrome", "Firefox"}
    assert sum(point["clicks"] for point in grouped["series"]) == 9
    # and the owner's top links and top browsers count them too
    top = report_of(stack, "clicks?code=e2e-visitors&group_by=browser")
    assert (top["total"], top["visitors"], top["links"][0]["code"]) == (9, 3, "e2e-visitors")
    ranked = report_of(stack, "clicks/top?by=code&limit=50")
    assert {"value": "e2e-visitors", "clicks": 9, "humans": 9, "visitors": 3} in ranked["top"]
    # and an export of the link's clicks has 9 lines with the export's columns
    lines = export_lines(stack, "code=e2e-visitors")
    assert len(lines) == 9 and {line["code"] for line in lines} == {"e2e-visitors"}
    assert len({line["visitor"] for line in lines}) == 3
    # and as JSON lines and as Parquet, the same 9 with the same columns
    objects = [json.loads(line) for line in export_file(stack, "code=e2e-visitors&format=jsonl").splitlines()]
    assert len(objects) == 9 and all(list(item) == list(EXPORT_COLUMNS) for item in objects)
    assert {item["bot"] for item in objects} == {False}
    parquet = export_file(stack, "code=e2e-visitors&format=parquet")
    with tempfile.NamedTemporaryFile(suffix=".parquet") as saved:
        saved.write(parquet)
        saved.flush()
        read = duckdb.sql(f"SELECT * FROM '{saved.name}'")
        assert read.columns == list(EXPORT_COLUMNS) and len(read.fetchall()) == 9
    # and another owner's export does not hold them
    _, other_key = create_key(stack, "e2e-other-owner")
    assert export_lines(stack, "from=2026-01-01", api_key=other_key) == []
    assert report_of(stack, "clicks/top?by=code", api_key=other_key)["top"] == []
    # When the same events are delivered to the event store again
    stored = stored_events(stack, "e2e-visitors")
    assert len(stored) == 9
    records = [
        {**event, "time": int(event["time"].replace(tzinfo=UTC).timestamp() * 1000)} for event in stored
    ]
    stack.boto3_client("firehose").put_record_batch(
        DeliveryStreamName=stack.resources["ClickEventsStream"],
        Records=[{"Data": json.dumps(record).encode() + b"\n"} for record in records],
    )
    assert len(stored_events(stack, "e2e-visitors")) == 18
    # Then they are stored twice and counted once
    again = report_of(stack, "links/e2e-visitors/clicks?group_by=browser&bots=include")
    assert (again["total"], again["visitors"]) == (9, 3)
    assert len(export_lines(stack, "code=e2e-visitors&format=csv")) == 9
    # When the day is compacted (the jobs worker's hourly run does the days before; asked for today)
    today = datetime.now(UTC).date().isoformat()
    answer = stack.boto3_client("lambda").invoke(
        FunctionName=stack.resources["FilesFunction"],
        Payload=json.dumps({"task": "click_compaction", "day": today}),
    )
    [compacted] = json.loads(answer["Payload"].read())["click_compaction"]
    assert compacted["outcome"] == "compacted" and compacted["rows_written"] < compacted["rows_read"]
    # Then the day is one object sorted by owner and link, each event once, counted the same
    s3, bucket = stack.boto3_client("s3"), stack.resources["ClickEventsBucket"]
    day_keys = [
        o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"events/day={today}/")["Contents"]
    ]
    assert len(day_keys) == 1 and "/compacted-" in day_keys[0], day_keys
    assert len(stored_events(stack, "e2e-visitors")) == 9
    after = report_of(stack, "links/e2e-visitors/clicks?group_by=browser")
    assert (after["total"], after["visitors"], after["all_time"]["clicks"]) == (9, 3, 9)


@pytest.mark.e2e_timeout(240)
def test_a_rule_links_clicks_are_broken_down_by_the_rule_that_answered_them(stack: RunningStack) -> None:
    # Given a link with an iPhone rule, followed by an iPhone through the API, by one through the
    # edge, and by a desktop browser (a rule link's answers are 302s: they depend on the visitor)
    link = {"url": "https://example.com/e2e/answered", "ios_url": "https://apps.example.com/e2e"}
    assert stack.post_json("/", {**link, "code": "e2e-answered"}).status == 201
    direct = stack.request("GET", "e2e-answered", headers={"User-Agent": IPHONE}, api_key=None)
    edge = http_request(stack.edge_url, "GET", "e2e-answered", headers={"User-Agent": IPHONE})
    desktop = stack.request("GET", "e2e-answered", headers={"User-Agent": BROWSER}, api_key=None)
    assert [answer.headers["Location"] for answer in (direct, edge, desktop)] == [
        "https://apps.example.com/e2e",
        "https://apps.example.com/e2e",
        "https://example.com/e2e/answered",
    ]
    # Then within 60 s the clicks broken down by destination say which rule answered each
    deadline = time.monotonic() + 60
    while True:
        found = report_of(stack, "links/e2e-answered/clicks?group_by=destination")
        groups = {group["value"]: group["clicks"] for group in found["groups"]}
        if groups == {"ios": 2, "default": 1}:
            break
        assert time.monotonic() < deadline, found
        time.sleep(1)
    # and the export says it of each click
    lines = export_lines(stack, "code=e2e-answered")
    assert sorted(line["destination"] for line in lines) == ["default", "ios", "ios"]


def erased(stack: RunningStack, query: str, api_key: str | None = None) -> dict[str, Any]:
    """DELETE /clicks, then its Location asked until the erasure is done."""
    keyed = {"api_key": api_key} if api_key else {}
    answer = stack.request("DELETE", f"clicks?{query}", **keyed)
    assert answer.status == 202, answer.text
    assert answer.json()["status"] == "running"
    location = answer.headers["Location"]
    assert location.startswith(stack.api_url + "clicks/erasures/"), location
    deadline = time.monotonic() + 60
    while (found := report_of(stack, location.removeprefix(stack.api_url), **keyed))["status"] != "done":
        assert time.monotonic() < deadline, found
        time.sleep(1)
    return found


@pytest.mark.e2e_timeout(240)
def test_an_owner_erases_a_links_click_events_from_every_event_file(stack: RunningStack) -> None:
    # Given two links, each followed 3 times, their events stored
    for code in ("e2e-erased", "e2e-kept"):
        assert stack.post_json("/", {"url": f"https://example.com/e2e/{code}", "code": code}).status == 201
        for _ in range(3):
            assert stack.request("GET", code, headers={"User-Agent": BROWSER}, api_key=None).status == 301
    deadline = time.monotonic() + 60
    while len(stored_events(stack, "e2e-erased")) < 3 or len(stored_events(stack, "e2e-kept")) < 3:
        assert time.monotonic() < deadline
        time.sleep(1)
    # When another owner asks to erase all their clicks, and to erase ours
    _, other_key = create_key(stack, "e2e-eraser-other")
    assert erased(stack, "", api_key=other_key)["events_erased"] == 0
    refused = stack.request("DELETE", "clicks?owner=e2e-admin-owner", api_key=other_key)
    assert refused.status == 403, refused.text
    # Then nothing of ours is erased
    assert len(stored_events(stack, "e2e-erased")) == 3
    # When the owner erases one link's clicks
    done = erased(stack, "code=e2e-erased")
    # Then its events are gone from every file, the other link's stay, and the erasure says so
    assert (done["codes"], done["events_erased"]) == (["e2e-erased"], 3)
    assert done["objects_rewritten"] >= 1 and done["finished_at"] is not None
    assert stored_events(stack, "e2e-erased") == []
    assert len(stored_events(stack, "e2e-kept")) == 3
    assert export_lines(stack, "code=e2e-erased") == []
    assert report_of(stack, "links/e2e-kept/clicks?group_by=browser")["visitors"] == 1
    # And an erasure nobody asked for is not found
    assert stack.request("GET", "clicks/erasures/" + "0" * 32).status == 404


@pytest.mark.e2e_timeout(240)
def test_cache_hits_count_and_a_batch_delivered_twice_counts_once(start_stack: StartStack) -> None:
    # Given the prod stage (API Gateway caches GET /{code}) and CloudWatch Logs delivering every
    # batch of the access log twice
    stack = start_stack(params={"Stage": "prod", "Edge": "off"}, faults=["duplicate-logs=1"])
    assert stack.post_json("/", {"url": "https://example.com/e2e/cached", "code": "e2e-cached"}).status == 201
    assert stack.request("GET", "e2e-cached", api_key=None, headers={"User-Agent": BROWSER}).status == 301
    # And the cache really answers: a change made behind the API's back is not seen
    stack.boto3_client("dynamodb").update_item(
        TableName=stack.resources["LinksTable"],
        Key={"code": {"S": "e2e-cached"}},
        UpdateExpression="SET #url = :other",
        ExpressionAttributeNames={"#url": "url"},
        ExpressionAttributeValues={":other": {"S": "https://example.com/e2e/not-yet-seen"}},
    )
    # When the link is followed 10 more times (7 browsers, 3 preview fetchers), from the cache
    follow_ten_times(stack, "e2e-cached")
    assert (
        stack.request("GET", "e2e-cached", api_key=None, headers={"User-Agent": BROWSER}).headers["Location"]
        == "https://example.com/e2e/cached"
    )
    # Then every answer counts once (1 + 10 + 1 follows), although each batch came twice
    expected = {"clicks": 12, "humans": 9, "bots": 3}
    assert wait_for_totals(stack, "e2e-cached", expected, 90) == expected
    # And the stack's own refresh of the cache entry (a change of target) is no click
    changed = stack.request(
        "PATCH",
        "links/e2e-cached",
        json.dumps({"url": "https://example.com/e2e/changed"}),
        {"Content-Type": "application/json"},
    )
    assert changed.status == 200, changed.text
    assert (
        stack.request("GET", "e2e-cached", api_key=None).headers["Location"]
        == "https://example.com/e2e/changed"
    )
    expected = {"clicks": 13, "humans": 9, "bots": 4}  # the follow just made, without a user agent
    assert wait_for_totals(stack, "e2e-cached", expected, 90) == expected
    time.sleep(2.5)  # a late second delivery, or the refresh's line, changes nothing
    assert totals(stack, "e2e-cached") == expected
    assert "duplicate-logs" in stack.log()
    assert "cache_refresh" in stack.log()  # the collector saw the refresh's line and skipped it


def test_a_jobs_click_report_has_a_line_per_row_in_input_order(stack: RunningStack) -> None:
    # Given a 5-row job whose third row is not a URL
    rows = [
        "https://example.com/e2e/r1",
        "https://example.com/e2e/r2",
        "not a url",
        "https://example.com/e2e/r4",
    ]
    upload = "url\n" + "\n".join([*rows, "https://example.com/e2e/r5"]) + "\n"
    accepted = stack.request("POST", "bulk", upload, {"Content-Type": "text/csv"})
    assert accepted.status == 202, accepted.text
    job_id = accepted.json()["job_id"]
    job = wait_for_job(stack, job_id, 90)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 4, 1)
    results = list(csv.DictReader(io.StringIO(stack.request("GET", f"jobs/{job_id}/results").text)))
    second = results[1]["code"]
    # When the second row's link is followed 3 times
    for _ in range(3):
        assert stack.request("GET", second, headers={"User-Agent": BROWSER}, api_key=None).status == 301
    # Then within 90 s the job's click report has 6 lines in input order, 3 clicks on row 2
    deadline = time.monotonic() + 90
    while True:
        answer = stack.request("GET", f"jobs/{job_id}/clicks")
        assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/csv")
        lines = answer.text.splitlines()
        report = list(csv.DictReader(io.StringIO(answer.text)))
        if report[1]["clicks"] == "3" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(lines) == 6
    assert lines[0] == "row,url,code,short_url,clicks,humans,first_click,last_click,destinations"
    assert [line["row"] for line in report] == ["1", "2", "3", "4", "5"]
    assert (report[1]["code"], report[1]["clicks"], report[1]["humans"]) == (second, "3", "3")
    assert report[1]["first_click"] and report[1]["last_click"]
    assert (report[2]["code"], report[2]["clicks"], report[2]["short_url"]) == ("", "0", "")
    assert all(line["clicks"] == "0" for index, line in enumerate(report) if index != 1)
    # And the clicks' events, and the owner's clicks by job, name the job and the row
    assert {(event["job_id"], event["row"]) for event in stored_events(stack, second)} == {(job_id, 2)}
    assert report_of(stack, f"clicks?job_id={job_id}")["total"] == 3


def wait_for_job(stack: RunningStack, job_id: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        job = dict(stack.request("GET", f"jobs/{job_id}").json())
        if job["status"] == "done" or time.monotonic() > deadline:
            return job
        time.sleep(0.5)


# Redirects followed at once before the kill -9, over this many links.
KILLED_CLICKS = 4_000
KILLED_LINKS = 10


@pytest.mark.e2e_timeout(300)
def test_redirects_followed_at_once_by_kill_9_are_all_counted_after_the_restart(
    start_stack: StartStack,
) -> None:
    # Given links on a stack whose WAF lets one client send them all, half of them with an iPhone
    # rule (the API function's destination line says which rule answered each of their clicks)
    stack = start_stack(params={"ClientRateLimit": 1_000_000})
    codes = [f"e2e-killed-{n}" for n in range(KILLED_LINKS)]
    ruled = codes[KILLED_LINKS // 2 :]
    for code in codes:
        rule = {"ios_url": f"https://apps.example/{code}"} if code in ruled else {}
        created = stack.post_json("/", {"url": f"https://example.com/{code}", "code": code, **rule})
        assert created.status == 201, created.text
    # When 4,000 redirects are followed at once by iPhones, and the stack is killed with kill -9
    # right after the last answer (their access log and destination lines not yet delivered)
    follows = [codes[n % KILLED_LINKS] for n in range(KILLED_CLICKS)]
    with ThreadPoolExecutor(8) as pool:
        answered = list(
            pool.map(
                lambda code: (code, stack.request("GET", code, api_key=None, headers={"User-Agent": IPHONE})),
                follows,
            )
        )
    stack.kill()
    assert {(code in ruled, answer.status) for code, answer in answered} == {(False, 301), (True, 302)}
    stack.restart()
    # Then after the restart every answered click is counted, once
    each = {"clicks": KILLED_CLICKS // KILLED_LINKS, "humans": KILLED_CLICKS // KILLED_LINKS, "bots": 0}
    assert [wait_for_totals(stack, code, each, 120) for code in codes] == [each] * KILLED_LINKS
    time.sleep(2)  # a late second delivery of a batch changes nothing
    assert totals(stack, codes[0]) == each
    # and every answer of a ruled link by its rule (a lost destination line would count as default)
    expected = [{"value": "ios", "clicks": KILLED_CLICKS // KILLED_LINKS}]
    deadline = time.monotonic() + 60
    for code in ruled:
        while (found := stack.request("GET", f"links/{code}/clicks").json()["destinations"]) != expected:
            assert time.monotonic() < deadline, (code, found)
            time.sleep(0.5)


@pytest.mark.e2e_timeout(240)
def test_a_loopback_receiver_gets_signed_link_click_and_job_events_and_a_retry(stack: RunningStack) -> None:
    # Given a receiver on loopback whose first answer is a 500, registered for three events
    with webhook_receiver(statuses=[500]) as receiver:
        events = ["link.created", "link.clicked", "job.completed"]
        answer = stack.post_json("webhooks", {"url": receiver.url, "events": events})
        assert answer.status == 201, answer.text
        webhook = answer.json()
        assert set(webhook) >= {"id", "url", "events", "secret"} and sorted(webhook["events"]) == sorted(
            events
        )
        assert "secret" not in stack.request("GET", f"webhooks/{webhook['id']}").json()
        # When a link is made, followed three times, and a job of two rows runs
        made = time.time()
        created = stack.post_json("/", {"url": "https://example.com/e2e/hooked", "code": "e2e-hooked"})
        assert created.status == 201, created.text
        for _ in range(3):
            headers = {"User-Agent": BROWSER}
            assert stack.request("GET", "e2e-hooked", headers=headers, api_key=None).status == 301
        upload = "url\nhttps://example.com/e2e/hooked-job/1\nhttps://example.com/e2e/hooked-job/2\n"
        accepted = stack.request("POST", "bulk", upload, {"Content-Type": "text/csv"})
        assert accepted.status == 202, accepted.text
        job_id = accepted.json()["job_id"]

        def clicked() -> int:
            return sum(
                1
                for _, body, _ in receiver.of_type("link.clicked")
                for click in body["data"]["clicks"]
                if click["code"] == "e2e-hooked"
            )

        # Then the link's creation arrives on a retry after its first delivery failed, within 30 s
        assert receiver.wait_for(lambda: len(receiver.of_type("link.created")) == 2, 30), receiver.deliveries
        # and the clicks arrive batched (three clicks of the link), and the job's completion
        assert receiver.wait_for(lambda: clicked() == 3 and receiver.of_type("job.completed"), 120), (
            receiver.deliveries
        )
        first, second = receiver.of_type("link.created")
        assert first[1] == second[1] and first[1]["data"]["code"] == "e2e-hooked"
        assert first[1]["data"]["short_url"] == created.json()["short_url"]
        assert second[0]["shortener-delivery"] == first[0]["shortener-delivery"]
        [(_, job_event, _)] = receiver.of_type("job.completed")
        assert (job_event["data"]["job_id"], job_event["data"]["succeeded"]) == (job_id, 2)
        # Every delivery carries a signature that verifies with the secret shown once
        for headers, raw, _ in receiver.deliveries:
            assert set(json.loads(raw)) == {"id", "type", "created_at", "data"}
            assert int(headers["content-length"]) == len(raw)
            assert verify(webhook["secret"], headers["shortener-signature"], raw, now=time.time()), headers
            assert not verify(webhook["secret"], headers["shortener-signature"], raw + b" ", now=time.time())
        # And the deliveries show both attempts of the link's creation: a 500, then a 200
        deliveries = stack.request("GET", f"webhooks/{webhook['id']}/deliveries").json()["deliveries"]
        [delivery] = [d for d in deliveries if d["type"] == "link.created"]
        assert (delivery["status"], delivery["attempts"], delivery["response_code"]) == ("delivered", 2, 200)
        assert [attempt["response_code"] for attempt in delivery["history"]] == [500, 200]
        assert delivery["id"] == first[0]["shortener-delivery"]
        # and the command line lists the endpoint and the same delivery with its attempts
        listed = shortener(stack, "webhooks", "list")
        assert listed.returncode == 0 and f"{webhook['id']}  enabled" in listed.stdout, listed.stderr
        printed = shortener(stack, "webhooks", "deliveries", webhook["id"])
        assert f"{delivery['id']}  link.created  delivered  attempts 2 (500,200)" in printed.stdout, printed
        # A replay sends the same event again
        replayed = stack.request("POST", f"webhooks/{webhook['id']}/deliveries/{delivery['id']}/replay")
        assert replayed.status == 202, replayed.text
        assert receiver.wait_for(lambda: len(receiver.of_type("link.created")) == 3, 30)
        assert receiver.of_type("link.created")[2][1] == first[1]
        assert made < receiver.deliveries[0][2]
        assert stack.request("DELETE", f"webhooks/{webhook['id']}").status == 204
