"""CPU time per bulk row in the loop: the real ChunkProcessor and the real LinksStore / JobsStore over
a real boto3 DynamoDB client (the one ``shortener.aws.dynamodb()`` makes, with its config),
with DynamoDB answered in process, so that only this code's CPU counts.

    python -m benchmarks cpu [--messages 200] [--rows 250] [--first-id 5000000] [--top 25]
                             [--find-if-exists both|false|true] [--no-profile]

Each message is what a loop receives: its JSON body is parsed into a ChunkMessage (as the poller
does) and processed. Everything botocore does for a request runs (parameter validation,
serialisation, SigV4 signing, response parsing, retry bookkeeping) except the HTTP send: a
``before-send`` hook answers each request with a canned, correct DynamoDB response for the
operations the path makes (UpdateItem ADD on the counter with its new value, BatchGetItem of the
reserved-id pages and of find-if-exists claims finding nothing, PutItem of the chunk's ids,
BatchWriteItem with no unprocessed items, TransactWriteItems of claims, UpdateItem of outcomes
and counts). The hook's own CPU is measured and subtracted. ``time.process_time()`` counts every
thread of the process (the chunk's write threads too).

Prints µs per row for each setting of find-if-exists, then (unless --no-profile) a cProfile
summary of one more run without find-if-exists: the top entries by cumulative time.
"""

import os

# The Lambda layer has no awscrt (shared/requirements.txt), so botocore signs in Python there; the
# development environment has awscrt (through aws-sam-cli), which botocore would otherwise use.
os.environ.setdefault("BOTO_DISABLE_CRT", "true")

import argparse
import cProfile
import io
import json
import pstats
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import botocore
from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HTTPHeaders
from botocore.compat import HAS_CRT

from shortener import aws
from shortener.jobs.bulk import ChunkProcessor
from shortener.jobs.message_model import ChunkMessage
from shortener.jobs.store import JobsStore
from shortener.links.codes import code_generator
from shortener.links.shortening import LinkService
from shortener.links.store import COUNTER_KEY, LinksStore
from shortener.links.urls import UrlPolicy

LINKS_TABLE = "bench-links"
JOBS_TABLE = "bench-jobs"
_TARGET_PREFIX = "DynamoDB_20120810."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200, help="messages processed per figure")
    parser.add_argument("--rows", type=int, default=250, help="rows per message (the loop's default)")
    parser.add_argument(
        "--first-id", type=int, default=5_000_000, help="counter value to start from (a table in use)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median and best printed)")
    parser.add_argument("--find-if-exists", choices=["both", "false", "true"], default="both")
    parser.add_argument("--top", type=int, default=25, help="profile entries printed")
    parser.add_argument("--no-profile", action="store_true", help="skip the profile")
    options = parser.parse_args()

    _offline_credentials()
    dynamodb = FakeDynamoDB(first_id=options.first_id)
    dynamodb.install()
    settings = ["false", "true"] if options.find_if_exists == "both" else [options.find_if_exists]
    print(
        f"CPU per row: {options.messages} messages x {options.rows} rows, counter from {options.first_id:,}, "
        f"botocore {botocore.__version__} signing in {'CRT' if HAS_CRT else 'Python'}"
    )
    for setting in settings:
        find_if_exists = setting == "true"
        runs = [
            measure(dynamodb, options.messages, options.rows, find_if_exists=find_if_exists)
            for _ in range(options.repeat)
        ]
        print(
            f"  find-if-exists {setting:5}: {statistics.median(runs):6.1f} µs per row "
            f"(median of {len(runs)}; best {min(runs):.1f})"
        )
    if not options.no_profile:
        print_profile(dynamodb, options.messages, options.rows, options.top)


def _offline_credentials() -> None:
    # Signing needs credentials; nothing leaves the process, so these are never checked.
    os.environ.update(
        {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
    )
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        os.environ.pop(name, None)
    aws.reset_clients()


class _Body:
    def __init__(self, content: bytes) -> None:
        self._content = content

    def stream(self, **_: Any) -> list[bytes]:
        return [self._content]


def _payload(request: AWSPreparedRequest) -> Any:
    body = request.body
    return json.loads(body if isinstance(body, str | bytes) else b"{}")


class FakeDynamoDB:
    """Answers the DynamoDB requests of the bulk path in process (a ``before-send`` hook on the
    client that ``shortener.aws.dynamodb()`` returns), and counts the CPU it spends doing so."""

    def __init__(self, *, first_id: int) -> None:
        self.next_id = first_id
        self.requests: dict[str, int] = {}
        self.hook_seconds = 0.0
        self._lock = threading.Lock()

    def install(self) -> None:
        aws.dynamodb().meta.events.register("before-send.dynamodb", self._answer)

    def _answer(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        # This thread's CPU only: process_time() would also count the other write threads meanwhile.
        started = time.thread_time()
        target = request.headers["X-Amz-Target"]
        operation = (target.decode() if isinstance(target, bytes) else target).removeprefix(_TARGET_PREFIX)
        with self._lock:
            self.requests[operation] = self.requests.get(operation, 0) + 1
            body = self._body(operation, request)
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.0"
        response = AWSResponse(request.url, 200, headers, _Body(json.dumps(body).encode()))
        with self._lock:
            self.hook_seconds += time.thread_time() - started
        return response

    def _body(self, operation: str, request: AWSPreparedRequest) -> dict[str, Any]:
        if operation == "UpdateItem":
            payload: Any = _payload(request)
            if payload["Key"].get("code", {}).get("S") == COUNTER_KEY:
                # ADD next_id :count, ReturnValues UPDATED_NEW: the counter's new value.
                self.next_id += int(payload["ExpressionAttributeValues"][":count"]["N"])
                return {"Attributes": {"next_id": {"N": str(self.next_id)}}}
            if payload.get("ReturnValues") == "ALL_NEW":
                # A chunk's count (JobsStore.count_chunk): the job item after it, far from complete
                # (a job of more rows than the benchmark processes), so no results file is asked for.
                return {"Attributes": self._job_item(payload["Key"]["job_id"]["S"])}
            return {}
        if operation == "BatchGetItem":
            # Nothing reserved by custom codes, no URL claimed before: every row is new.
            tables = _payload(request)["RequestItems"]
            return {"Responses": {table: [] for table in tables}, "UnprocessedKeys": {}}
        if operation == "BatchWriteItem":
            return {"UnprocessedItems": {}}
        if operation in ("PutItem", "TransactWriteItems"):
            return {}
        raise AssertionError(f"the bulk path made an unexpected request: {operation}")

    @staticmethod
    def _job_item(job_id: str) -> dict[str, Any]:
        return {
            "job_id": {"S": job_id},
            "sk": {"S": "job"},
            "total": {"N": "1000000000"},
            "chunks": {"N": "4000000"},
            "succeeded": {"N": "250"},
            "created_at": {"S": "2026-01-01T00:00:00+00:00"},
        }


def message_bodies(count: int, rows: int, *, start: int = 0) -> list[str]:
    """SQS bodies of ``count`` messages of ``rows`` URLs each (realistic, all different)."""
    bodies = []
    for number in range(start, start + count):
        query = f"utm_source=sms&utm_campaign=c{number}"
        urls = [[f"https://shop{row % 97}.example.com/item{number}-{row}?{query}", ""] for row in range(rows)]
        message = {"job_id": f"{number:032x}", "chunk": number, "first_row": number * rows + 1, "rows": urls}
        bodies.append(json.dumps(message))
    return bodies


def processor(*, find_if_exists: bool) -> ChunkProcessor:
    """The processor as the poller builds it (functions/poller/app.py), over the benchmark's tables."""
    links = LinksStore(LINKS_TABLE)
    generator = code_generator("")
    policy = UrlPolicy(allowed_schemes=frozenset({"http", "https"}), max_length=2048)
    return ChunkProcessor(
        links,
        JobsStore(JOBS_TABLE),
        LinkService(LinksStore(LINKS_TABLE), generator, find_if_exists=find_if_exists, cache_seconds=0),
        generator,
        policy,
        find_if_exists=find_if_exists,
    )


def run(bodies: list[str], chunk_processor: ChunkProcessor) -> None:
    for body in bodies:
        chunk_processor.process(ChunkMessage.model_validate_json(body))


def measure(dynamodb: FakeDynamoDB, messages: int, rows: int, *, find_if_exists: bool) -> float:
    """CPU µs per row of processing ``messages`` messages, after a warm-up message."""
    chunk_processor = processor(find_if_exists=find_if_exists)
    run(message_bodies(1, rows, start=10_000_000), chunk_processor)  # clients, pools, caches
    bodies = message_bodies(messages, rows, start=_next_start())
    hook_before = dynamodb.hook_seconds
    started = time.process_time()
    run(bodies, chunk_processor)
    spent = time.process_time() - started - (dynamodb.hook_seconds - hook_before)
    return spent / (messages * rows) * 1e6


_starts = iter(range(0, 10_000_000, 100_000))


def _next_start() -> int:
    # Fresh job ids and URLs for each run (no cache carries over from an earlier run).
    return next(_starts)


def print_profile(dynamodb: FakeDynamoDB, messages: int, rows: int, top: int) -> None:
    chunk_processor = processor(find_if_exists=False)
    run(message_bodies(1, rows, start=10_000_001), chunk_processor)
    bodies = message_bodies(messages, rows, start=_next_start())
    # The chunk's writes run on the calling thread here, so that the profile (of one thread) holds them.
    chunk_processor._pool = _InlinePool()  # type: ignore[assignment]
    profile = cProfile.Profile()
    profile.runcall(run, bodies, chunk_processor)
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    print(f"\nProfile without find-if-exists, writes inline, top {top} entries by cumulative time:")
    print(_trim(out.getvalue()))
    print(f"requests made: {dict(sorted(dynamodb.requests.items()))}")


class _InlinePool:
    def map(self, function: Callable[..., Any], *iterables: Any) -> Iterator[Any]:
        return map(function, *iterables)


def _trim(report: str) -> str:
    # pstats prints a preamble and long paths; keep the table, with paths from site-packages on.
    lines = [line for line in report.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(line.replace(os.getcwd() + "/", "") for line in lines[start:])


if __name__ == "__main__":
    main()
