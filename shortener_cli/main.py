"""`shortener`: shorten one URL, upload a CSV in bulk and wait for its results, manage links, the
blocklist (admins), list the loops.

Exit codes: 0 done, 1 the API refused (4xx/5xx) or a job did not finish in time, 2 wrong usage,
3 unreachable."""

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from shortener_cli.client import ApiError, ShortenerClient, UnreachableError
from shortener_cli.loops import dynamodb_client, find_tokens_table, format_loops, list_loops

DEFAULT_API_URL = "http://127.0.0.1:3000/"
DEFAULT_AWS_ENDPOINT = "http://127.0.0.1:3001"
EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
_BAR_WIDTH = 30


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shortener", description="Client of the bulk URL shortener.")
    parser.add_argument(
        "--api-url",
        default=os.environ.get("SHORTENER_API_URL", DEFAULT_API_URL),
        help="base URL of the API (env SHORTENER_API_URL; default: the local stack)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    shorten = commands.add_parser("shorten", help="shorten one URL and print the short URL")
    shorten.add_argument("url")
    shorten.add_argument("--code", help="a custom code")

    bulk = commands.add_parser("bulk", help="upload a CSV with a url column (and an optional code column)")
    bulk.add_argument("file", type=Path)
    bulk.add_argument("--wait", action="store_true", help="wait for the job, with a progress bar")
    bulk.add_argument("--output", type=Path, help="write the results CSV here (implies --wait)")
    bulk.add_argument("--timeout", type=float, default=3600.0, help="give up waiting after this many seconds")
    bulk.add_argument("--poll-interval", type=float, default=1.0, help="seconds between status checks")

    job = commands.add_parser("job", help="show a bulk job's status")
    job.add_argument("job_id")

    links = commands.add_parser("links", help="list your links, newest first")
    links.add_argument("--tag", help="only links with this tag")
    links.add_argument("--search", help="only links whose URL contains this")
    links.add_argument("--owner", help="another owner's links (admins)")
    links.add_argument("--limit", type=int, default=25, help="links per page (1-100)")
    links.add_argument("--all", action="store_true", help="every page, not only the first")

    link = commands.add_parser("link", help="show one of your links")
    link.add_argument("code")

    update = commands.add_parser("update", help="change a link's target, title or tags, or disable it")
    update.add_argument("code")
    update.add_argument("--url", help="the new target (the code stays the same)")
    update.add_argument("--title")
    update.add_argument("--tag", action="append", dest="tags", help="a tag (repeat; replaces the tags)")
    state = update.add_mutually_exclusive_group()
    state.add_argument("--disable", action="store_const", const="disabled", dest="status")
    state.add_argument("--enable", action="store_const", const="active", dest="status")

    delete = commands.add_parser("delete", help="delete a link: its code answers 410 Gone from now on")
    delete.add_argument("code")

    block = commands.add_parser("block", help="refuse links to a host and its subdomains (admins)")
    block.add_argument("host")
    block.add_argument("--reason", default="")
    unblock = commands.add_parser("unblock", help="allow a blocked host again (admins)")
    unblock.add_argument("host")
    commands.add_parser("blocklist", help="list the blocked hosts (admins)")

    loops = commands.add_parser("loops", help="list the loops draining the queues, with their heartbeats")
    loops.add_argument(
        "--aws-endpoint",
        default=os.environ.get("AWS_ENDPOINT_URL", DEFAULT_AWS_ENDPOINT),
        help="AWS endpoint (env AWS_ENDPOINT_URL; default: the local stack; 'aws' for real AWS)",
    )
    loops.add_argument("--tokens-table", help="the tokens table (default: the one table named *TokensTable*)")
    loops.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it went."""
    args = build_parser().parse_args(argv)
    client = ShortenerClient(args.api_url)
    commands = {
        "shorten": lambda: _shorten(client, args),
        "bulk": lambda: _bulk(client, args),
        "job": lambda: _job(client, args.job_id),
        "links": lambda: _links(client, args),
        "link": lambda: _show(client.link(args.code)),
        "update": lambda: _update(client, args),
        "delete": lambda: _show(client.delete_link(args.code)),
        "block": lambda: _show(client.block(args.host, args.reason)),
        "unblock": lambda: _unblock(client, args.host),
        "blocklist": lambda: _blocklist(client),
        "loops": lambda: _loops(args),
    }
    try:
        return commands[args.command]()
    except ApiError as exc:
        print(f"shortener: {exc.message} ({exc.status} {exc.error})", file=sys.stderr)
        return EXIT_REFUSED
    except UnreachableError as exc:
        print(f"shortener: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        print("shortener: interrupted", file=sys.stderr)
        return 130


def _shorten(client: ShortenerClient, args: argparse.Namespace) -> int:
    link = client.shorten(args.url, args.code)
    print(link["short_url"])
    return EXIT_OK


def _bulk(client: ShortenerClient, args: argparse.Namespace) -> int:
    try:
        data = args.file.read_bytes()
    except OSError as exc:
        print(f"shortener: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    job = client.upload(data)
    print(f"job {job['job_id']}: {job['total']} rows", file=sys.stderr)
    if not (args.wait or args.output):
        print(job["job_id"])
        return EXIT_OK
    status = _wait_for(client, job["job_id"], args.timeout, args.poll_interval, sys.stderr)
    if status is None:
        print(f"shortener: job {job['job_id']} not done after {args.timeout:g} s", file=sys.stderr)
        return EXIT_REFUSED
    results = client.results(job["job_id"])
    if args.output:
        args.output.write_bytes(results)
        print(f"results written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(results.decode("utf-8"))
    if status.get("failed"):
        # Row errors (an invalid URL, a taken code) are results, not a failure of the job.
        print(f"{status['failed']} rows have an error; see the error column", file=sys.stderr)
    return EXIT_OK


def _wait_for(
    client: ShortenerClient, job_id: str, timeout: float, interval: float, out: TextIO
) -> dict[str, Any] | None:
    """Poll the job until it is done, drawing a progress bar; None on timeout."""
    deadline = time.monotonic() + timeout
    # On a terminal the bar redraws in place; in a log, each change is a line of its own.
    redraw, end = ("\r", "") if out.isatty() else ("", "\n")
    shown = ""
    while True:
        status = client.job(job_id)
        bar = progress_bar(status)
        if bar != shown:
            out.write(redraw + bar + end)
            out.flush()
            shown = bar
        if status.get("status") == "done" or time.monotonic() >= deadline:
            if redraw:
                out.write("\n")
            return status if status.get("status") == "done" else None
        time.sleep(interval)


def progress_bar(status: dict[str, Any]) -> str:
    """One line: [#####.....] 600/1000 rows, 3 failed (running)."""
    total = int(status.get("total") or 0)
    done = int(status.get("succeeded") or 0) + int(status.get("failed") or 0)
    filled = _BAR_WIDTH if total == 0 else min(_BAR_WIDTH, _BAR_WIDTH * done // total)
    bar = "#" * filled + "." * (_BAR_WIDTH - filled)
    return f"[{bar}] {done}/{total} rows, {int(status.get('failed') or 0)} failed ({status.get('status')})"


def _job(client: ShortenerClient, job_id: str) -> int:
    status = client.job(job_id)
    print(" ".join(f"{key}={value}" for key, value in status.items()))
    return EXIT_OK


def _links(client: ShortenerClient, args: argparse.Namespace) -> int:
    cursor, rows = "", []
    while True:
        page = client.links(
            tag=args.tag or "",
            q=args.search or "",
            owner=args.owner or "",
            limit=str(args.limit),
            cursor=cursor,
        )
        rows += page["links"]
        cursor = page.get("next_cursor") or ""
        if not (args.all and cursor):
            break
    print(format_links(rows))
    if cursor:
        print("more links follow: --all lists every page", file=sys.stderr)
    return EXIT_OK


def format_links(links: list[dict[str, Any]]) -> str:
    """One line per link: code, status, creation date, short URL, target and title."""
    if not links:
        return "No links."
    lines = []
    for link in links:
        status = "" if link["status"] == "active" else f" [{link['status']}]"
        title = f"  {link['title']}" if link.get("title") else ""
        lines.append(f"{link['short_url']}{status}  {link['created_at'][:10]}  -> {link['url']}{title}")
    return "\n".join(lines)


def _update(client: ShortenerClient, args: argparse.Namespace) -> int:
    changes = {
        key: value
        for key, value in (
            ("url", args.url),
            ("title", args.title),
            ("tags", args.tags),
            ("status", args.status),
        )
        if value is not None
    }
    if not changes:
        print("shortener: nothing to change (--url, --title, --tag, --disable or --enable)", file=sys.stderr)
        return EXIT_USAGE
    return _show(client.update_link(args.code, changes))


def _show(fields: dict[str, Any]) -> int:
    for key, value in fields.items():
        print(f"{key}: {', '.join(value) if isinstance(value, list) else value}")
    return EXIT_OK


def _unblock(client: ShortenerClient, host: str) -> int:
    client.unblock(host)
    print(f"{host} is no longer blocked")
    return EXIT_OK


def _blocklist(client: ShortenerClient) -> int:
    hosts = client.blocklist()
    for entry in hosts:
        reason = f"  ({entry['reason']})" if entry.get("reason") else ""
        print(f"{entry['host']}  blocked {entry['created_at'][:10]} by {entry['added_by']}{reason}")
    if not hosts:
        print("No blocked hosts.")
    return EXIT_OK


def _loops(args: argparse.Namespace) -> int:
    endpoint = None if args.aws_endpoint == "aws" else args.aws_endpoint
    try:
        dynamodb = dynamodb_client(endpoint, args.region)
        table = args.tokens_table or find_tokens_table(dynamodb)
        print(format_loops(list_loops(dynamodb, table)))
    except LookupError as exc:
        print(f"shortener: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (BotoCoreError, ClientError) as exc:
        print(f"shortener: cannot read the loops: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
