"""The click event: one row per counted click, as it goes to the event store (Firehose, then
Parquet in S3, asked through Athena; docs/clicks.md, "Events"). No client address is kept: the
visitor is a keyed hash of address and user agent under a key that lives one day and is then
forgotten (shortener.clicks.visitor_keys), so a visitor is counted once a day and cannot be traced
back or followed across days."""

import hashlib
import hmac
from datetime import datetime

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shortener.clicks.model import MAX_VALUE_LENGTH, Click, DeviceClass

DEFAULT_DESTINATION = "default"
# Hex characters of the HMAC-SHA256 kept (64 bits): collisions among one link's daily visitors are
# negligible, and the id is still a hash, never the address.
VISITOR_ID_LENGTH = 16
# Bytes of a daily key (random, from secrets.token_bytes).
VISITOR_KEY_BYTES = 32


def visitor_id(key: bytes, address: str | None, user_agent: str | None) -> str:
    """The day's id of a visitor: HMAC-SHA256 under the day's key of address and user agent,
    truncated. The same visitor on the same day has the same id; another day's key gives another."""
    message = f"{address or ''}\n{user_agent or ''}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:VISITOR_ID_LENGTH]


class ClickEvent(BaseModel):
    """One click as the event store keeps it (the Glue table's columns, template.yaml)."""

    model_config = ConfigDict(frozen=True)

    time: datetime
    # The request's id (API Gateway's requestId, or the edge's x-edge-request-id): the same click
    # delivered twice is one request, which the queries count once.
    request_id: str = Field(min_length=1, max_length=128)
    code: str = Field(max_length=256)
    owner: str = Field(max_length=256)
    job_id: str | None = Field(default=None, max_length=128)
    row: int | None = Field(default=None, ge=0)
    destination: str = Field(default=DEFAULT_DESTINATION, max_length=MAX_VALUE_LENGTH)
    status: int = Field(ge=100, le=599)
    country: str = Field(max_length=MAX_VALUE_LENGTH)
    device: DeviceClass
    browser: str = Field(max_length=MAX_VALUE_LENGTH)
    os: str = Field(max_length=MAX_VALUE_LENGTH)
    referrer: str | None = Field(default=None, max_length=MAX_VALUE_LENGTH)
    bot: bool
    visitor: str = Field(min_length=VISITOR_ID_LENGTH, max_length=VISITOR_ID_LENGTH)

    def record(self) -> bytes:
        """The event as the delivery stream takes it: one line of JSON, its time in epoch
        milliseconds (the stream's HiveJsonSerDe reads ``millis``, template.yaml)."""
        document = self.model_dump(mode="json")
        document["time"] = int(self.time.timestamp() * 1000)
        return orjson.dumps(document) + b"\n"

    @property
    def day(self) -> str:
        """The partition the event is stored under (UTC day, as the table's projection reads it)."""
        return self.time.strftime("%Y-%m-%d")


def click_event(
    click: Click,
    *,
    request_id: str,
    owner: str,
    status: int,
    visitor: str,
    job_id: str | None = None,
    row: int | None = None,
    destination: str = DEFAULT_DESTINATION,
) -> ClickEvent:
    """The event of a counted click (its classification as counted, the link's owner and job)."""
    return ClickEvent(
        time=click.at,
        request_id=request_id,
        code=click.code,
        owner=owner,
        job_id=job_id,
        row=row,
        destination=destination,
        status=status,
        country=click.country,
        device=click.device,
        browser=click.browser,
        os=click.os,
        referrer=click.referrer,
        bot=click.bot,
        visitor=visitor,
    )


class AnswerEvent(BaseModel):
    """Which rule answered one request of a rule, password or preview link, as the event store
    keeps it (the destinations table, template.yaml): the queries take a click's destination from
    the answer with its request id."""

    model_config = ConfigDict(frozen=True)

    time: datetime
    request_id: str = Field(min_length=1, max_length=128)
    code: str = Field(max_length=256)
    destination: str = Field(max_length=MAX_VALUE_LENGTH)

    def record(self) -> bytes:
        """One line of JSON, its time in epoch milliseconds (as ClickEvent.record)."""
        document = self.model_dump(mode="json")
        document["time"] = int(self.time.timestamp() * 1000)
        return orjson.dumps(document) + b"\n"
