"""Asking the click events (data access): an Athena query in the stack's workgroup and database,
waited for, and its rows read (GetQueryResults pages, the header row dropped). A query that
fails or is cancelled (the workgroup's bytes scanned limit) is EventQueryError with Athena's
reason; one still running after ``timeout`` seconds is stopped and ServiceUnavailableError, so an
API answer never waits past its gateway's 29 s."""

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shortener import aws
from shortener.clicks.event_queries import Query
from shortener.exceptions import InvalidRequestError, ServiceUnavailableError

_NAME = re.compile(r"[A-Za-z0-9_]+")
# Pauses between status reads: Athena answers small queries in about a second.
_FIRST_PAUSE, _LONGEST_PAUSE = 0.05, 0.5


@dataclass(frozen=True)
class QueryOutcome:
    state: str  # QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED
    reason: str
    output: str  # s3://bucket/key of the answer's CSV


class EventQueryError(InvalidRequestError):
    """Athena refused or stopped the query (its reason is the message)."""


class ClickEventStore:
    """The click events' table, asked through Athena."""

    def __init__(
        self,
        work_group: str,
        database: str,
        table: str,
        client: Any = None,
        *,
        answers: str = "",
        timeout: float = 25.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not all(_NAME.fullmatch(name) for name in (database, table, *([answers] if answers else []))):
            raise ValueError(f"The click events' database and tables are names: {database!r}, {table!r}")
        self.work_group = work_group
        self.database = database
        self.table = f'"{database}"."{table}"'
        # Which rule answered each request (joined by request id), where the stack keeps them.
        self.answers = f'"{database}"."{answers}"' if answers else None
        self._client = client
        self._timeout = timeout
        self._sleep = sleep

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = aws.athena()
        return self._client

    def start(self, query: Query) -> str:
        """Start the query; its execution id."""
        started: dict[str, Any] = {
            "QueryString": query.sql,
            "WorkGroup": self.work_group,
            "QueryExecutionContext": {"Database": self.database},
        }
        if query.parameters:
            started["ExecutionParameters"] = query.parameters
        return str(self.client.start_query_execution(**started)["QueryExecutionId"])

    def outcome(self, execution_id: str) -> QueryOutcome:
        """Where a started query is: its state, Athena's reason when it did not succeed, and where
        its answer (the CSV) is once it did."""
        execution = self.client.get_query_execution(QueryExecutionId=execution_id)["QueryExecution"]
        status = execution["Status"]
        return QueryOutcome(
            state=str(status["State"]),
            reason=str(status.get("StateChangeReason") or ""),
            output=str((execution.get("ResultConfiguration") or {}).get("OutputLocation") or ""),
        )

    def rows(self, query: Query) -> list[dict[str, str | None]]:
        """The answer's rows, each a column -> text (None for null)."""
        execution_id = self.start(query)
        self.wait(execution_id)
        rows: list[dict[str, str | None]] = []
        names: list[str] = []
        token: str | None = None
        while True:
            page = self.client.get_query_results(
                QueryExecutionId=execution_id, **({"NextToken": token} if token else {})
            )
            for row in page["ResultSet"]["Rows"]:
                values = [cell.get("VarCharValue") for cell in row["Data"]]
                if not names:
                    names = [str(value) for value in values]
                    continue
                rows.append(dict(zip(names, values, strict=True)))
            token = page.get("NextToken")
            if not token:
                return rows

    def wait(self, execution_id: str) -> None:
        """Until the query succeeded; EventQueryError if it failed or was cancelled."""
        deadline = time.monotonic() + self._timeout
        pause = _FIRST_PAUSE
        while True:
            status = self.client.get_query_execution(QueryExecutionId=execution_id)["QueryExecution"][
                "Status"
            ]
            state = status["State"]
            if state == "SUCCEEDED":
                return
            if state in ("FAILED", "CANCELLED"):
                raise EventQueryError(
                    f"The click events could not be asked: {status.get('StateChangeReason', state)}"
                )
            if time.monotonic() > deadline:
                self.client.stop_query_execution(QueryExecutionId=execution_id)
                raise ServiceUnavailableError(
                    "The click events took too long to answer; ask for a shorter range."
                )
            self._sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)


def kept_events(work_group: str, database: str, table: str, answers: str = "") -> ClickEventStore | None:
    """The click events where the stack keeps them (its settings name all three), else None."""
    if not (work_group and database and table):
        return None
    return ClickEventStore(work_group, database, table, answers=answers)
