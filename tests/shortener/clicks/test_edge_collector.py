"""The collector function under moto, fed as AWS feeds it the edge's clicks: CloudFront's standard
log records (JSON) put into EdgeLogGroup with PutLogEvents, delivered by its subscription filter
(local_stack/cloudwatch/subscriptions.py) gzip+base64 to the collector, counted into the clicks
table with their country and referrer host, once even when every batch is delivered twice."""

import contextlib
import io
import json
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest

from local_stack.cloudwatch import subscriptions
from shortener.clicks.store import ClicksStore
from tests.shortener.clicks.test_edge_records import record
from tests.support.loops import LambdaContext

pytestmark = pytest.mark.integration

GROUP = "/aws/vendedlogs/cloudfront/t-edge"


def subscribed_group(collector: ModuleType, duplicates: float) -> list[dict[str, Any]]:
    """EdgeLogGroup subscribed to the collector (a function moto knows of, as CloudWatch Logs checks),
    its deliveries handed to the collector's handler at once; the summaries it answered."""
    summaries: list[dict[str, Any]] = []
    iam = boto3.client("iam")
    role = iam.create_role(RoleName="collector", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("app.py", "def lambda_handler(event, context): pass\n")
    arn = boto3.client("lambda").create_function(
        FunctionName="collector", Runtime="python3.13", Role=role, Handler="app.lambda_handler",
        Code={"ZipFile": code.getvalue()},
    )["FunctionArn"]  # fmt: skip
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName=GROUP)
    logs.put_subscription_filter(
        logGroupName=GROUP, filterName="clicks", filterPattern="", destinationArn=arn
    )

    def invoke(function: str, event: dict[str, Any], *_: Any) -> None:
        assert function == "collector"
        summaries.append(collector.lambda_handler(event, LambdaContext("collector")))

    subscriptions.install()
    subscriptions.set_delivery(subscriptions.runtime_delivery(lambda _: "collector", invoke, duplicates))
    return summaries


@pytest.fixture
def delivery_reset() -> Iterator[None]:
    yield
    subscriptions.set_delivery(None)


def put(records: list[str], stream: str = "cloudfront") -> None:
    logs = boto3.client("logs")
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_stream(logGroupName=GROUP, logStreamName=stream)
    now = int(datetime.now(UTC).timestamp() * 1000)
    logs.put_log_events(
        logGroupName=GROUP,
        logStreamName=stream,
        logEvents=[{"timestamp": now, "message": message} for message in records],
    )


def test_edge_records_put_into_the_log_group_are_counted_once_with_country_and_referrer(
    collector: ModuleType, tables: dict[str, str], delivery_reset: None
) -> None:
    # Given EdgeLogGroup subscribed to the collector, each batch delivered twice (duplicate-logs=1)
    summaries = subscribed_group(collector, duplicates=1.0)
    at = int(datetime.now(UTC).timestamp() * 1000)
    # When CloudFront's delivery puts two redirects (a hit and a miss), a 404 and a HEAD
    batch = [
        record(**{"timestamp(ms)": str(at), "x-edge-request-id": "r1", "c-country": "FR"}),
        record(**{"timestamp(ms)": str(at), "x-edge-request-id": "r2", "x-edge-result-type": "Miss"}),
        record(**{"timestamp(ms)": str(at), "x-edge-request-id": "r3", "sc-status": "404"}),
        record(**{"timestamp(ms)": str(at), "x-edge-request-id": "r4", "cs-method": "HEAD"}),
    ]
    put(batch)
    # ... and puts the same batch again, in another stream (new event ids)
    put(batch, "again")
    # Then the first delivery counted two clicks, every other one nothing
    assert [s["clicks"] for s in summaries if not s["already_counted"]] == [2]
    assert [s["already_counted"] for s in summaries] == [False, True, True, True]
    # ... and the clicks table holds them, with CloudFront's countries and the referrer's host
    store = ClicksStore(tables["CLICKS_TABLE"])
    now = datetime.now(UTC)
    [hour] = store.hours("abc", now - timedelta(hours=1), now + timedelta(hours=1))
    assert (hour.clicks, hour.humans) == (2, 2)
    assert hour.values["country"] == {"FR": 1, "DE": 1}
    assert hour.values["referrer"] == {"news.example.com": 2}
    assert store.totals(["abc"])["abc"].clicks == 2
    # ... and no viewer address anywhere in it
    scanned = json.dumps(boto3.client("dynamodb").scan(TableName=tables["CLICKS_TABLE"])["Items"])
    assert "203.0.113.7" not in scanned
