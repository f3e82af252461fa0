"""The local stack's durable state: a clean stop and a start with many links, a start after
`kill -9` (replaying the journal), and what the journal costs each write.

    python -m benchmarks persistence [--links 200000] [--crash-links 50000]
                                     [--journal-writes 10000] [--rounds 5]

1. Journal cost: an embedded AWS in this process (the local stack's, with the template's tables)
   takes --journal-writes links by BatchWriteItem (25 a request, over HTTP) with and without the
   durable state attached; the ratio of the two times (wall and CPU) is the journal's cost (median
   of --rounds).
2. Snapshot: --links links put straight into that embedded AWS are saved to a snapshot and restored
   into fresh tables, in-process: wall and CPU seconds (CPU time says more on a busy machine).
3. A local stack subprocess (`python -m local_stack`, started by the e2e harness) is filled with --links links
   by BatchWriteItem straight into its embedded AWS (4 writers), then stopped with SIGTERM: the time
   to exit, and the save time the stack reports. Then started again: the time until its READY line,
   and the restore time it reports.
4. --crash-links more links are written, the stack is killed with SIGKILL (its process group and
   its workers), and started again: the time until READY, with those writes replayed from the journal.
5. S3: an object of --s3-mb MB put into the bulk bucket of an embedded AWS in this process, with
   and without the durable state attached (its body written and fsynced to a file of its own), then
   a clean stop (the snapshot) and a restore of the stack holding it. The stack of 3 also holds
   such an object when it is stopped.

    python -m benchmarks persistence --s3-only [--s3-mb 100]   (5 alone: seconds, not minutes)
"""

import argparse
import contextlib
import logging
import os
import re
import statistics
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from local_stack.harness import StackProcess

ROOT = Path(__file__).resolve().parent.parent
BATCH = 25
# A busy machine (the figures are often taken while other test runs share it) needs patience.
START_TIMEOUT = STOP_TIMEOUT = 600.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=200_000, help="links held at the clean stop")
    parser.add_argument("--crash-links", type=int, default=50_000, help="links written before kill -9")
    parser.add_argument("--journal-writes", type=int, default=10_000, help="links per journal-cost round")
    parser.add_argument("--rounds", type=int, default=5, help="journal-cost rounds (median taken)")
    parser.add_argument("--s3-mb", type=int, default=100, help="size of the S3 object held")
    parser.add_argument("--s3-only", action="store_true", help="only the S3 figures (5)")
    options = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    s3 = measure_s3_in_process(options.s3_mb)
    print_s3_figures(options.s3_mb, s3)
    if options.s3_only:
        return

    journal = measure_journal_cost(options.journal_writes, options.rounds)
    snapshot = measure_snapshot_in_process(options.links)
    with tempfile.TemporaryDirectory(prefix="bench-persistence-") as folder:
        lifecycle = measure_stop_and_start(Path(folder), options.links, options.crash_links)
    print_figures(options, journal, snapshot, lifecycle)


# ---- 1. the journal's cost per write ---------------------------------------------------------------


def measure_journal_cost(writes: int, rounds: int) -> dict[str, float]:
    """BatchWriteItem with and without the journal, alternating, in this process (client and
    server), so that its CPU time, steadier than wall time on a busy machine, counts both."""
    from local_stack.embedded.server import EmbeddedAws
    from local_stack.patches import install_moto_fixes

    install_moto_fixes()  # the services' moto patches, as the stack runs with

    server = EmbeddedAws(0)
    server.start()
    plain: list[tuple[float, float]] = []
    journaled: list[tuple[float, float]] = []
    try:
        for _ in range(rounds):
            plain.append(timed_batch_writes(fresh_resources(server), writes))
            resources = fresh_resources(server)
            with (
                tempfile.TemporaryDirectory(prefix="bench-journal-") as folder,
                attached(server, resources, Path(folder)),
            ):
                journaled.append(timed_batch_writes(resources, writes))
    finally:
        server.stop()
    return {
        "writes": writes,
        "plain_per_second": writes / statistics.median(wall for wall, _ in plain),
        "journaled_per_second": writes / statistics.median(wall for wall, _ in journaled),
        "wall_ratio": statistics.median(j[0] / p[0] for j, p in zip(journaled, plain, strict=True)),
        "cpu_ratio": statistics.median(j[1] / p[1] for j, p in zip(journaled, plain, strict=True)),
    }


@contextlib.contextmanager
def attached(server: Any, resources: Any, folder: Path) -> Iterator[Any]:
    """A durable state in ``folder``, journaling the server's requests; abandoned afterwards."""
    from local_stack.cloudformation.intrinsics import ACCOUNT_ID
    from local_stack.durability import DurableState
    from local_stack.dynamodb import DynamoDbState
    from local_stack.sqs import SqsState

    state = DurableState(
        folder,
        [DynamoDbState(ACCOUNT_ID, resources.region), SqsState(ACCOUNT_ID, resources.region)],
        resources.names,
        exclusive=server.exclusive,
    )
    state.restore()
    server.request_end_hooks.append(state.end_request)
    state.start()
    try:
        yield state
    finally:
        server.request_end_hooks.remove(state.end_request)
        state.abandon()


def measure_snapshot_in_process(links: int) -> dict[str, float]:
    """Save and restore ``links`` links in this process: wall and CPU seconds of each."""
    from moto.dynamodb.models import dynamodb_backends

    from local_stack.cloudformation.intrinsics import ACCOUNT_ID
    from local_stack.dynamodb.state import _insert
    from local_stack.embedded.server import EmbeddedAws
    from local_stack.patches import install_moto_fixes

    install_moto_fixes()  # the services' moto patches, as the stack runs with

    server = EmbeddedAws(0)
    server.start()
    try:
        resources = fresh_resources(server)
        table = dynamodb_backends[ACCOUNT_ID][resources.region].tables[resources.physical_id("LinksTable")]
        for number in range(links):  # straight into moto: filling is not what is measured
            _insert(table, link_item("p", number))
        with tempfile.TemporaryDirectory(prefix="bench-snapshot-") as folder:
            with attached(server, resources, Path(folder)) as state:
                wall, cpu = time.perf_counter(), time.process_time()
                state.compact()
                saved = (time.perf_counter() - wall, time.process_time() - cpu)
            resources = fresh_resources(server)
            wall, cpu = time.perf_counter(), time.process_time()
            with attached(server, resources, Path(folder)):
                restored = (time.perf_counter() - wall, time.process_time() - cpu)
    finally:
        server.stop()
    return {
        "save_wall": saved[0],
        "save_cpu": saved[1],
        "restore_wall": restored[0],
        "restore_cpu": restored[1],
    }


def fresh_resources(server: Any) -> Any:
    from local_stack.cloudformation.intrinsics import Resolver, parameter_values
    from local_stack.cloudformation.resources import create_resources, name_resources
    from local_stack.cloudformation.template import expand_sam, load_template
    from local_stack.registry import PROVIDERS_BY_TYPE

    server.reset()
    expanded = expand_sam(load_template(), "bench", "us-east-1")
    resolver = Resolver(
        parameters=parameter_values(expanded["Parameters"], {}),
        region="us-east-1",
        stack_name="bench",
        conditions=expanded.get("Conditions", {}),
    )
    resources = name_resources(expanded, resolver, server.url, "us-east-1")
    create_resources(resources, lambda name: "http://127.0.0.1:9/sns/" + name, PROVIDERS_BY_TYPE)
    return resources


def timed_batch_writes(resources: Any, writes: int) -> tuple[float, float]:
    """Wall and CPU seconds of writing ``writes`` links, 25 to a BatchWriteItem."""
    from local_stack.embedded.client import aws_client

    dynamodb = aws_client("dynamodb", resources.aws_endpoint, resources.region)
    table = resources.physical_id("LinksTable")
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, writes, BATCH):
        write_batch(dynamodb, table, start, min(BATCH, writes - start), "j")
    return time.perf_counter() - wall, time.process_time() - cpu


def link_item(prefix: str, number: int) -> dict[str, Any]:
    """A link shaped as the API writes it."""
    return {
        "code": {"S": f"{prefix}{number:07d}"},
        "url": {"S": f"https://shop.example.com/campaign/products/{number}?utm_source=bench"},
        "created_at": {"N": "1767225600"},
        "is_custom": {"BOOL": False},
        "owner": {"S": "local"},
    }


def write_batch(dynamodb: Any, table: str, start: int, count: int, prefix: str) -> None:
    """``count`` links by BatchWriteItem, codes ``<prefix><number>``."""
    requests = [{"PutRequest": {"Item": link_item(prefix, number)}} for number in range(start, start + count)]
    pending: dict[str, Any] = {table: requests}
    while pending:
        pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


# ---- 2 and 3. stop and start of a local stack ------------------------------------------------------


def measure_stop_and_start(folder: Path, links: int, crash_links: int) -> dict[str, Any]:
    arguments = [
        "--api-port",
        "0",
        "--aws-port",
        "0",
        "--data-dir",
        str(folder / "data"),
        "--log-level",
        "WARNING",
    ]
    stack = _Stack(arguments, folder / "stack.log")
    figures: dict[str, Any] = {"first_start": timed(stack.start, START_TIMEOUT)}
    try:
        figures["fill"] = fill(stack, links, "c")
        stack.boto3_client("s3").put_object(
            Bucket=stack.resources["BulkBucket"], Key="uploads/bench.csv", Body=os.urandom(100 * 1024 * 1024)
        )
        figures["stop"] = timed(stack.stop, STOP_TIMEOUT)
        figures["saved"] = _reported(stack.log(), r"Saved (\d+) items .* in ([\d.]+) s")
        figures["start"] = timed(stack.start, START_TIMEOUT)
        figures["restored"] = _reported(stack.log(), r"restored (\d+) items, \d+ messages in ([\d.]+) s")
        figures["crash_fill"] = fill(stack, crash_links, "k")
        stack.kill()
        figures["crash_start"] = timed(stack.start, START_TIMEOUT)
        figures["replayed"] = _reported(
            stack.log(), r"restored (\d+) items, \d+ messages in ([\d.]+) s; (\d+) changes replayed"
        )
        figures["data_bytes"] = sum(path.stat().st_size for path in (folder / "data").iterdir())
    finally:
        stack.stop(STOP_TIMEOUT)
    return figures


class _Stack(StackProcess):
    """A local stack subprocess, its READY line's resources and a client of its embedded AWS."""

    info: dict[str, Any] = {}

    def start(self, timeout: float) -> None:
        self.info = self.launch(timeout)

    @property
    def resources(self) -> dict[str, str]:
        return dict(self.info["resources"])

    def boto3_client(self, service: str) -> Any:
        return boto3.session.Session(
            aws_access_key_id="local", aws_secret_access_key="local", region_name=self.info["region"]
        ).client(service, endpoint_url=self.info["aws_endpoint"], config=Config(retries={"mode": "standard"}))


def timed(action: Any, timeout: float) -> float:
    started = time.perf_counter()
    action(timeout)
    return time.perf_counter() - started


def fill(stack: Any, count: int, prefix: str, writers: int = 4) -> float:
    """Write ``count`` links by BatchWriteItem, ``writers`` at a time; the seconds it took."""
    table = stack.resources["LinksTable"]
    starts = list(range(0, count, BATCH))

    def write(share: list[int]) -> None:
        dynamodb = stack.boto3_client("dynamodb")
        for start in share:
            write_batch(dynamodb, table, start, min(BATCH, count - start), prefix)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=writers) as pool:
        list(pool.map(write, [starts[writer::writers] for writer in range(writers)]))
    return time.perf_counter() - started


def _reported(log: str, pattern: str) -> tuple[str, ...]:
    found = re.findall(pattern, log)
    if not found:
        raise RuntimeError(f"the stack did not print {pattern!r}:\n{log[-3000:]}")
    last = found[-1]
    return tuple(last) if isinstance(last, tuple) else (last,)


# ---- 5. S3 objects ---------------------------------------------------------------------------------


def measure_s3_in_process(megabytes: int) -> dict[str, float]:
    """Seconds of: a PUT of a ``megabytes`` MB object without and with the durable state, the
    clean stop of a state holding it, and the restore of it into a fresh bucket."""
    from local_stack.cloudformation.intrinsics import ACCOUNT_ID
    from local_stack.cloudformation.resources import BUCKET
    from local_stack.durability import DurableState
    from local_stack.embedded.client import aws_client
    from local_stack.embedded.server import EmbeddedAws
    from local_stack.patches import install_moto_fixes
    from local_stack.s3 import S3State

    body = os.urandom(megabytes * 1024 * 1024)
    install_moto_fixes()  # the services' moto patches, as the stack runs with
    server = EmbeddedAws(0)
    server.start()
    figures: dict[str, float] = {}
    try:
        resources = fresh_resources(server)
        s3 = aws_client("s3", resources.aws_endpoint, resources.region)
        bucket = resources.physical_id("BulkBucket")
        started = time.perf_counter()
        s3.put_object(Bucket=bucket, Key="uploads/plain.csv", Body=body)
        figures["put_plain"] = time.perf_counter() - started
        with tempfile.TemporaryDirectory(prefix="bench-s3-") as folder:
            buckets = {
                logical_id: resources.physical_id(logical_id) for logical_id in resources.of_type(BUCKET)
            }

            def open_state() -> DurableState:
                state = DurableState(
                    Path(folder),
                    [S3State(ACCOUNT_ID, Path(folder), buckets)],
                    resources.names,
                    exclusive=server.exclusive,
                )
                state.restore()
                server.request_end_hooks.append(state.end_request)
                state.start()
                return state

            resources = fresh_resources(server)
            state = open_state()
            started = time.perf_counter()
            s3.put_object(Bucket=bucket, Key="uploads/journaled.csv", Body=body)
            figures["put_journaled"] = time.perf_counter() - started
            server.request_end_hooks.remove(state.end_request)
            started = time.perf_counter()
            state.close()
            figures["stop"] = time.perf_counter() - started
            resources = fresh_resources(server)
            started = time.perf_counter()
            state = open_state()
            figures["restore"] = time.perf_counter() - started
            head = s3.head_object(Bucket=bucket, Key="uploads/journaled.csv")
            assert head["ContentLength"] == len(body), head
            server.request_end_hooks.remove(state.end_request)
            state.abandon()
    finally:
        server.stop()
    return figures


def print_s3_figures(megabytes: int, figures: dict[str, float]) -> None:
    print(
        f"\nS3 in the durable state: one {megabytes} MB object, in-process "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n"
        f"    PUT without / with the state  {figures['put_plain']:.2f} s / {figures['put_journaled']:.2f} s "
        "(body written and fsynced)\n"
        f"    clean stop holding it         {figures['stop']:.2f} s\n"
        f"    start restoring it            {figures['restore']:.2f} s"
    )


def print_figures(
    options: argparse.Namespace,
    journal: dict[str, float],
    snapshot: dict[str, float],
    lifecycle: dict[str, Any],
) -> None:
    saved_items, saved_seconds = lifecycle["saved"]
    restored_items, restored_seconds = lifecycle["restored"]
    crash_items, crash_seconds, replayed = lifecycle["replayed"]
    lines = [
        "",
        f"Durable state of the local stack (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)",
        f"  journal cost: BatchWriteItem of {journal['writes']:,} links, median of {options.rounds} rounds",
        f"    without the journal        {journal['plain_per_second']:,.0f} links/s",
        f"    with the journal           {journal['journaled_per_second']:,.0f} links/s",
        f"    ratio with / without       {journal['wall_ratio']:.2f} wall time, "
        f"{journal['cpu_ratio']:.2f} CPU time",
        f"  snapshot of {options.links:,} links in-process",
        f"    save                       {snapshot['save_wall']:.1f} s ({snapshot['save_cpu']:.1f} s CPU)",
        f"    restore                    {snapshot['restore_wall']:.1f} s "
        f"({snapshot['restore_cpu']:.1f} s CPU)",
        f"  a stack holding {options.links:,} links (filled in {lifecycle['fill']:.1f} s by BatchWriteItem) "
        "and a 100 MB upload",
        f"    clean stop (SIGTERM to exit)  {lifecycle['stop']:.1f} s   "
        f"(saving {int(saved_items):,} items: {float(saved_seconds):.1f} s)",
        f"    start (to READY)              {lifecycle['start']:.1f} s   "
        f"(restoring {int(restored_items):,} items: {float(restored_seconds):.1f} s; "
        f"an empty first start: {lifecycle['first_start']:.1f} s)",
        f"  after kill -9 with {options.crash_links:,} more links in the journal",
        f"    start (to READY)              {lifecycle['crash_start']:.1f} s   "
        f"(restoring {int(crash_items):,} items: {float(crash_seconds):.1f} s, "
        f"{int(replayed):,} changes replayed)",
        f"  data dir after that start: {lifecycle['data_bytes'] / 1e6:.1f} MB",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
