"""The daily visitor keys in the clicks table (moto)."""

from datetime import UTC, date, datetime

import boto3
import pytest

from shortener.clicks.visitor_keys import VISITOR_KEY_PK, VisitorKeys

pytestmark = pytest.mark.integration

MONDAY = date(2026, 11, 30)
TUESDAY = date(2026, 12, 1)


def _table(tables: dict[str, str]) -> str:
    return tables["CLICKS_TABLE"]


def test_every_collector_agrees_on_the_days_key(tables: dict[str, str]) -> None:
    # Given two containers, When both ask for Monday's key, Then the second reads the first's
    first, second = VisitorKeys(_table(tables)), VisitorKeys(_table(tables))
    assert first.key(MONDAY) == second.key(MONDAY)


def test_each_day_has_its_own_key_that_expires_after_the_day(tables: dict[str, str]) -> None:
    keys = VisitorKeys(_table(tables))
    assert keys.key(MONDAY) != keys.key(TUESDAY)
    item = boto3.client("dynamodb").get_item(
        TableName=_table(tables), Key={"pk": {"S": VISITOR_KEY_PK}, "sk": {"S": MONDAY.isoformat()}}
    )["Item"]
    # Then Monday's key expires two hours after Monday ends (UTC), then DynamoDB's TTL deletes it
    assert int(item["expires_at"]["N"]) == int(datetime(2026, 12, 1, 2, tzinfo=UTC).timestamp())
