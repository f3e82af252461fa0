"""Reading the loops (the tokens table) through an AWS endpoint: the local stack's, or AWS's."""

import time
from dataclasses import dataclass
from typing import Any

import boto3

TOKENS_TABLE_SUFFIX = "TokensTable"


@dataclass(frozen=True)
class Loop:
    """One row of the tokens table."""

    queue_url: str
    token: str
    loop_id: str
    started_at: int | None
    last_used: int | None

    def heartbeat_age(self, now: float) -> float | None:
        return now - self.last_used if self.last_used is not None else None


def dynamodb_client(endpoint_url: str | None, region: str | None) -> Any:
    """A DynamoDB client; on the local stack any credentials do, so fake ones stand in if none."""
    session = boto3.session.Session(region_name=region)
    credentials = {}
    if endpoint_url and session.get_credentials() is None:
        credentials = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    return session.client("dynamodb", endpoint_url=endpoint_url, **credentials)  # type: ignore[call-overload]


def find_tokens_table(dynamodb: Any) -> str:
    """The one table whose name ends with "TokensTable" (what CloudFormation and the local stack
    name it); ambiguous or missing is an error that asks for --tokens-table."""
    names = [
        name
        for page in dynamodb.get_paginator("list_tables").paginate()
        for name in page["TableNames"]
        if TOKENS_TABLE_SUFFIX in name
    ]
    if len(names) != 1:
        found = ", ".join(names) or "none"
        raise LookupError(f"cannot tell which table holds the loops (found: {found}); pass --tokens-table")
    return names[0]


def list_loops(dynamodb: Any, table: str) -> list[Loop]:
    """Every loop, by queue and start time."""
    loops = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            loops.append(
                Loop(
                    queue_url=item["queue_url"]["S"],
                    token=item["token"]["S"],
                    loop_id=item.get("loop_id", {}).get("S", ""),
                    started_at=_number(item.get("started_at")),
                    last_used=_number(item.get("last_used")),
                )
            )
    return sorted(loops, key=lambda loop: (loop.queue_url, loop.started_at or 0))


def format_loops(loops: list[Loop], now: float | None = None) -> str:
    """A table of loops for a terminal."""
    if not loops:
        return "No loops."
    moment = time.time() if now is None else now
    rows = [("QUEUE", "TOKEN", "LOOP ID", "HEARTBEAT")]
    for loop in loops:
        age = loop.heartbeat_age(moment)
        rows.append(
            (
                loop.queue_url.rsplit("/", 1)[-1],
                loop.token[:12],
                loop.loop_id[:12],
                "never" if age is None else f"{age:.0f} s ago",
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows
    )


def _number(value: dict[str, str] | None) -> int | None:
    return int(float(value["N"])) if value and "N" in value else None
