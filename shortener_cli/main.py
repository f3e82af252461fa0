"""`shortener`: shorten one URL, upload a CSV in bulk (in the request, or straight to S3 when it is
larger) and wait for its results, fetch the results of any job, manage links, the blocklist
(admins), list the loops, make, list and revoke API keys. Where the API and its key come from:
shortener_cli/config.py.

Exit codes: 0 done (also when the reader of stdout went away, as ``| head -1`` does), 1 the API
(or AWS) refused (4xx/5xx) or a job did not finish in time, 2 wrong usage (a file that cannot be
written included), 3 unreachable, 4 a job ended early (its file was not read to its end: rows after that point
have no outcome; the message says why)."""

import argparse
import csv
import getpass
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from shortener.exceptions import InvalidKeyRequestError, ShortenerError
from shortener.links.model import TEXT_ATTRIBUTES
from shortener.links.rules_model import UTM_TAGS
from shortener_cli import keys, output, webhooks
from shortener_cli.client import ApiError, ShortenerClient, UnreachableError, multipart_file
from shortener_cli.config import ConfigError, local_stacks, resolve_endpoint
from shortener_cli.loops import dynamodb_client, find_tokens_table, format_loops, list_loops

DEFAULT_AWS_ENDPOINT = "http://127.0.0.1:3001"
EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_ENDED_EARLY = 0, 1, 2, 3, 4
_BAR_WIDTH = 30
# Files up to this size go in the request body (POST /bulk); larger ones straight to S3.
SMALL_BODY_BYTES = 4_000_000


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shortener", description="Client of the bulk URL shortener.")
    parser.add_argument(
        "--api-url",
        help="base URL of the API (env SHORTENER_API_URL, config api_url; default: the local stack)",
    )
    parser.add_argument(
        "--api-key",
        help="API key sent as X-Api-Key (env SHORTENER_API_KEY; else the local stack's own key, "
        "else api_key in ~/.config/shortener/config.toml)",
    )
    parser.add_argument(
        "--local-stack",
        metavar="DATA_DIR",
        help="data dir of the local stack (env SHORTENER_LOCAL_STACK; default: ./.local-stack)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the answers as JSON (for programs), not as text; CSV results and reports go to "
        "--output then, and stdout holds the job's status",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    shorten = commands.add_parser("shorten", help="shorten one URL and print the short URL")
    shorten.add_argument("url")
    shorten.add_argument("--code", help="a custom code")
    shorten.add_argument("--domain", help="the domain it answers on (`shortener domains` lists them)")
    add_link_fields(shorten)
    domains = commands.add_parser("domains", help="list the stack's domains, and which you may use")
    domains.add_argument("--json", action="store_true", help="print JSON")

    bulk = commands.add_parser("bulk", help="upload a CSV with a url column (and an optional code column)")
    bulk.add_argument("file", type=Path)
    bulk.add_argument(
        "--domain", help="the domain of the rows whose domain cell is empty (`shortener domains` lists them)"
    )
    bulk.add_argument("--wait", action="store_true", help="wait for the job, with a progress bar")
    bulk.add_argument("--output", type=Path, help="write the results CSV here (implies --wait)")
    bulk.add_argument("--timeout", type=float, default=3600.0, help="give up waiting after this many seconds")
    bulk.add_argument("--poll-interval", type=float, default=1.0, help="seconds between status checks")
    bulk.add_argument(
        "--direct",
        action="store_true",
        help=f"upload straight to storage even when small (automatic above {SMALL_BODY_BYTES:,} bytes)",
    )

    results = commands.add_parser("results", help="write a job's results CSV (waits for the job by default)")
    results.add_argument("job_id")
    results.add_argument("--output", type=Path, help="write here instead of to stdout")
    results.add_argument("--no-wait", action="store_true", help="do not wait for the job to be done")
    results.add_argument(
        "--timeout", type=float, default=3600.0, help="give up waiting after this many seconds"
    )
    results.add_argument("--poll-interval", type=float, default=1.0, help="seconds between status checks")

    job = commands.add_parser("job", help="show a bulk job's status")
    job.add_argument("job_id")

    _add_clicks_command(commands)

    _add_link_commands(commands)
    webhooks.add_parser(commands)

    loops = commands.add_parser("loops", help="list the loops draining the queues, with their heartbeats")
    loops.add_argument(
        "--aws-endpoint",
        default=os.environ.get("AWS_ENDPOINT_URL"),
        help="AWS endpoint (env AWS_ENDPOINT_URL; default: the running local stack's; 'aws' for real AWS)",
    )
    loops.add_argument("--tokens-table", help="the tokens table (default: the one table named *TokensTable*)")
    loops.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))

    keys_parser = commands.add_parser(
        "keys", help="make, list and revoke API keys (of the local stack, or a deployed one with --stack)"
    )
    key_commands = keys_parser.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="make a key and print it (shown this once only)")
    create.add_argument("--name", required=True, help="what the key is for (e.g. ci-pipeline)")
    create.add_argument("--owner", required=True, help="owner id: whose links and jobs the key's calls are")
    create.add_argument("--role", choices=["member", "admin"], default="member")
    create.add_argument(
        "--domains",
        default="",
        help="the only domains its calls may make links on, comma-separated (default: every one; "
        "`shortener domains` lists them)",
    )
    key_commands.add_parser("list", help="list the keys (ids, owners, roles, revoked or not)")
    revoke = key_commands.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("key_id")
    for sub in key_commands.choices.values():
        sub.add_argument(
            "--stack", help="a deployed stack's name (its outputs name the tables); default: the local stack"
        )
        sub.add_argument(
            "--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        )
    return parser


def _add_clicks_command(commands: Any) -> None:
    """``shortener clicks``: reports, breakdowns, exports and a job's report."""
    clicks = commands.add_parser(
        "clicks", help="a link's clicks over time, a job's clicks per row (--job), or your top links"
    )
    clicks.add_argument("code", nargs="?", help="the link (none: your most followed links)")
    clicks.add_argument("--from", dest="start", help="ISO 8601 date or time (default: 30 days ago)")
    clicks.add_argument("--to", dest="end", help="ISO 8601 date or time (default: now)")
    clicks.add_argument(
        "--interval", choices=("hour", "day", "week", "month"), help="series step (default: day)"
    )
    clicks.add_argument(
        "--tz", help="IANA time zone of the series' buckets, such as Europe/Berlin (default: UTC)"
    )
    clicks.add_argument(
        "--group-by",
        choices=("country", "device", "browser", "os", "referrer", "destination", "code"),
        help="a breakdown by this value (code: without CODE only)",
    )
    for name in ("country", "device", "browser", "os", "referrer"):
        clicks.add_argument(f"--{name}", help=f"only clicks with this {name}")
    clicks.add_argument("--bots", choices=("include", "exclude", "only"), help="bots and preview fetchers")
    clicks.add_argument("--tag", help="without CODE: only your links with this tag")
    clicks.add_argument(
        "--export",
        type=Path,
        metavar="FILE",
        help="write every click (of CODE, or of all your links) here: CSV, or JSON lines or Parquet"
        " when FILE ends in .jsonl or .parquet",
    )
    clicks.add_argument("--csv", action="store_true", help="print the series as CSV (start,clicks,humans)")
    clicks.add_argument("--job", help="a bulk job: its click report CSV, one line per input row")
    clicks.add_argument("--output", type=Path, help="with --job: write the report here instead of stdout")
    clicks.add_argument(
        "--timeout", type=float, default=900.0, help="with --job or --export: wait this long for the file"
    )


def _add_link_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """links, link, update, delete; block, unblock, blocklist (admins)."""
    links = commands.add_parser("links", help="list your links, newest first")
    for flag, meaning in (
        ("--tag", "only links with this tag"),
        ("--search", "only links whose URL contains this"),
        ("--owner", "another owner's links (admins)"),
        ("--domain", "only the links of this domain"),
    ):
        links.add_argument(flag, help=meaning)
    links.add_argument("--limit", type=int, help="links per page (1-1000; default 100, 1000 with --all)")
    links.add_argument("--all", action="store_true", help="every page, not only the first")
    links.add_argument(
        "--format",
        choices=["table", "csv", "jsonl"],
        default="table",
        help="table for people; csv or jsonl (one JSON object a line) to export, e.g. with --all",
    )

    link = commands.add_parser("link", help="show one of your links")
    link.add_argument("code")

    update = commands.add_parser("update", help="change a link's target, title or tags, or disable it")
    update.add_argument("code")
    update.add_argument("--url", help="the new target (the code stays the same)")
    add_link_fields(update, removable=True)
    update.add_argument("--tag", action="append", dest="tag_list", help="a tag (repeat; replaces the tags)")
    state = update.add_mutually_exclusive_group()
    state.add_argument("--disable", action="store_const", const="disabled", dest="status")
    state.add_argument("--enable", action="store_const", const="active", dest="status")

    qr = commands.add_parser(
        "qr", help="write a link's QR code (PNG or SVG, from --output's extension), or a job's as a ZIP"
    )
    qr.add_argument("code", nargs="?")
    qr.add_argument("--job", help="a done job: a ZIP with one QR code per shortened row")
    qr.add_argument("--format", choices=("png", "svg"), default="png", help="the images in a job's ZIP")
    qr.add_argument("--output", type=Path, required=True, help="code.png, code.svg, or labels.zip")
    qr.add_argument("--size", type=int, help="width in pixels (64-4096; default 512)")
    qr.add_argument(
        "--timeout", type=float, default=3600.0, help="give up waiting for a job's ZIP after this"
    )

    delete = commands.add_parser("delete", help="delete a link: its code answers 410 Gone from now on")
    delete.add_argument("code")

    batch = commands.add_parser(
        "batch", help="disable, enable, delete or change many links at once (by code, job or tag), and wait"
    )
    actions = batch.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, summary in (
        ("disable", "disable the links (they answer 410 until enabled)"),
        ("enable", "enable disabled links again"),
        ("delete", "delete the links (their codes answer 410 from now on)"),
        ("set", "set the links' expiry, click limit, tags or title"),
    ):
        chosen = actions.add_parser(action, help=summary)
        chosen.add_argument("codes", nargs="*", metavar="CODE", help="the links' codes")
        chosen.add_argument("--job", help="every link a bulk job made (a done job)")
        chosen.add_argument("--tag", help="every link with this tag")
        chosen.add_argument(
            "--timeout", type=float, default=3600.0, help="stop waiting after this many seconds"
        )
        chosen.add_argument("--poll-interval", type=float, default=1.0, help="seconds between status reads")
        if action == "set":
            add_link_fields(chosen)

    block = commands.add_parser("block", help="refuse links to a host and its subdomains (admins)")
    block.add_argument("host")
    block.add_argument("--reason", default="")
    unblock = commands.add_parser("unblock", help="allow a blocked host again (admins)")
    unblock.add_argument("host")
    commands.add_parser("blocklist", help="list the blocked hosts (admins)")
    audit = commands.add_parser(
        "audit", help="the audit log: who changed which link, key, host or batch, newest first (admins)"
    )
    audit.add_argument("--from", dest="begin", help="ISO 8601 date or time (default: 30 days ago)")
    audit.add_argument("--to", dest="end", help="ISO 8601 date or time (default: now)")
    audit.add_argument("--actor", help="only this key id's (or signed-in person's) changes")
    audit.add_argument("--code", help="only changes of this link (or host, key id, batch id, username)")
    audit.add_argument(
        "--action", help="only this kind: link.created, link.updated, host.blocked, user.signed_in, ..."
    )
    audit.add_argument("--all", action="store_true", help="every page, not only the newest 100")


def add_link_fields(parser: argparse.ArgumentParser, *, removable: bool = False) -> None:
    """--title, --tags, --expires-at and --max-clicks: the API's link fields (docs/api.md).
    ``removable``: ``none`` removes a limit (PATCH sends it as null)."""
    for name in TEXT_ATTRIBUTES:
        parser.add_argument(f"--{name}", help=f"the link's {name}")
    parser.add_argument("--tags", help="tags separated by commas, e.g. spring,sms (replace the tags)")
    removes = "; none removes it" if removable else ""
    parser.add_argument(
        "--expires-at",
        help=f"when the link expires: ISO 8601 with a zone, e.g. 2026-12-31T23:59:00Z{removes}",
    )
    parser.add_argument(
        "--max-clicks",
        type=_removable_count if removable else int,
        help=f"redirects the link answers before it expires{removes}",
    )
    # The link's rules (docs/api.md, "Link rules"): geo and variants as a bulk file writes them.
    parser.add_argument("--ios-url", help=f"where iPhones and iPads go{removes}")
    parser.add_argument("--android-url", help=f"where Android devices go{removes}")
    parser.add_argument(
        "--geo", help=f"countries' URLs, e.g. 'DE=https://shop.de/;FR=https://shop.fr/'{removes}"
    )
    parser.add_argument(
        "--variants", help=f"an A/B split, e.g. 'https://a.example/|50;https://b.example/|50'{removes}"
    )
    for tag in UTM_TAGS:
        parser.add_argument(f"--utm-{tag}", help=f"the utm_{tag} added to the destination's query")
    parser.add_argument(
        "--forward-query",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pass the short URL's own query string on to the destination",
    )
    # Password and preview links (docs/api.md, "Password and preview links").
    parser.add_argument(
        "--password",
        nargs="?",
        const=_ASK,
        help="visitors must type it before the redirect; without a value it is asked for (not echoed)"
        + ("; none removes it" if removable else ""),
    )
    parser.add_argument(
        "--preview-title", help=f"what link-preview fetchers and social crawlers show{removes}"
    )
    parser.add_argument("--preview-description", help="the preview's description (with --preview-title)")
    parser.add_argument("--preview-image", help="the preview's image: an absolute https URL")


def _removable_count(text: str) -> int | str:
    return "none" if text.strip().lower() == "none" else int(text)


def link_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The link fields given, as the API names them; a limit given as ``none`` is sent as null
    (PATCH removes it)."""
    tags = list(getattr(args, "tag_list", None) or [])
    if args.tags is not None:
        tags += [tag.strip() for tag in args.tags.split(",") if tag.strip()]
    given = {
        **{name: getattr(args, name) for name in TEXT_ATTRIBUTES},
        "tags": tags if args.tags is not None or tags else None,
        "expires_at": args.expires_at,
        "max_clicks": args.max_clicks,
        **{name: getattr(args, name, None) for name in _RULE_TEXTS},
        "forward_query": getattr(args, "forward_query", None),
    }
    utm = {tag: value for tag in UTM_TAGS if (value := getattr(args, f"utm_{tag}", None)) is not None}
    if utm:
        given["utm"] = utm
    password = getattr(args, "password", None)
    given["password"] = getpass.getpass("Password for the link: ") if password is _ASK else password
    preview = {
        name: value
        for name in ("title", "description", "image")
        if (value := getattr(args, f"preview_{name}", None)) is not None
    }
    if preview:
        given["preview"] = "none" if str(preview.get("title")).strip().lower() == "none" else preview
    return {
        name: None if name in _REMOVABLE and str(value).strip().lower() == "none" else value
        for name, value in given.items()
        if value is not None
    }


_LIMITS = ("expires_at", "max_clicks")
_RULE_TEXTS = ("ios_url", "android_url", "geo", "variants")
_REMOVABLE = (*_LIMITS, *_RULE_TEXTS, "password", "preview")
# --password given without a value: asked for at the terminal.
_ASK = object()


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it went."""
    args = build_parser().parse_args(argv)
    try:
        endpoint = resolve_endpoint(args.api_url, args.api_key, args.local_stack)
    except ConfigError as exc:
        print(f"shortener: {exc}", file=sys.stderr)
        return EXIT_USAGE
    client = ShortenerClient(endpoint.api_url, api_key=endpoint.api_key)
    commands = {
        "shorten": lambda: _shorten(client, args),
        "bulk": lambda: _bulk(client, args),
        "results": lambda: _results(client, args.job_id, args),
        "job": lambda: _show(client.job(args.job_id), args.json),
        "clicks": lambda: _clicks(client, args),
        "links": lambda: _links(client, args),
        "link": lambda: _show(client.link(args.code), args.json),
        "domains": lambda: _domains(client, args.json),
        "update": lambda: _update(client, args),
        "delete": lambda: _show(client.delete_link(args.code), args.json),
        "qr": lambda: _qr(client, args),
        "batch": lambda: _batch(client, args),
        "block": lambda: _show(client.block(args.host, args.reason), args.json),
        "unblock": lambda: _unblock(client, args.host, args.json),
        "blocklist": lambda: _blocklist(client, args.json),
        "audit": lambda: _audit(client, args),
        "webhooks": lambda: webhooks.run(client, args),
        "loops": lambda: _loops(args),
        "keys": lambda: _keys(args),
    }
    return _run(commands[args.command])


def _run(command: Callable[[], int]) -> int:
    """``command``'s exit code; a refusal, an unreachable API, a closed pipe or a file that cannot
    be written is a line on stderr and an exit code, never a traceback."""
    try:
        return command()
    except BrokenPipeError:
        # The reader went away (`| head -1`): what it did not read is not wanted. Later writes,
        # the interpreter's own flush at exit included, go nowhere instead of failing again.
        # https://docs.python.org/3/library/signal.html#note-on-sigpipe
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OutputError as exc:
        print(f"shortener: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ApiError as exc:
        hint = ""
        if exc.status == 403 and exc.error in ("missing_api_key", "invalid_api_key"):
            hint = (
                "; pass --api-key, set SHORTENER_API_KEY, or put api_key in ~/.config/shortener/config.toml"
            )
        print(f"shortener: {exc.message} ({exc.status} {exc.error}){hint}", file=sys.stderr)
        return EXIT_REFUSED
    except UnreachableError as exc:
        print(f"shortener: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        print("shortener: interrupted", file=sys.stderr)
        return 130


def _qr(client: ShortenerClient, args: argparse.Namespace) -> int:
    check_folder(args.output)
    if bool(args.job) == bool(args.code):
        print("shortener: name a link's code or a --job, not both", file=sys.stderr)
        return EXIT_USAGE
    if args.job:
        deadline = time.monotonic() + args.timeout
        size = write_whole(
            args.output, lambda out: client.save_labels(args.job, args.format, out, deadline=deadline)
        )
        print(f"QR codes of job {args.job} ({size:,} bytes) written to {args.output}", file=sys.stderr)
        if args.json:
            print(output.as_json({"job_id": args.job, "output": str(args.output), "bytes": size}))
        return EXIT_OK
    image_format = args.output.suffix.lower().lstrip(".")
    if image_format not in ("png", "svg"):
        print(f"shortener: {args.output} should end in .png or .svg", file=sys.stderr)
        return EXIT_USAGE
    image = client.qr(args.code, image_format, args.size)
    size = write_whole(args.output, lambda out: out.write(image))
    print(f"QR code of {args.code} written to {args.output}", file=sys.stderr)
    if args.json:
        print(output.as_json({"code": args.code, "output": str(args.output), "bytes": size}))
    return EXIT_OK


class OutputError(Exception):
    """A file the user named cannot be written (no such folder, no permission, disk full)."""


def check_folder(path: Path | None) -> None:
    """OutputError, before any work is done, when ``path``'s folder does not exist (a download
    after an hour's wait must not fail for a typo)."""
    if path is not None and not path.parent.is_dir():
        raise OutputError(f"cannot write {path}: the folder {path.parent} does not exist")


def write_whole(path: Path, write: Callable[[BinaryIO], int]) -> int:
    """Write ``path`` with ``write`` (which returns the bytes written): aside first and renamed
    when whole, so a failed download leaves no partial file. OutputError (one line, no
    traceback) when the file cannot be written."""
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as out:
            size = write(out)
        partial.replace(path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return size


def batch_request(args: argparse.Namespace) -> dict[str, Any] | str:
    """The POST /links/batch body the arguments ask for, or what is wrong with them."""
    selectors = [bool(args.codes), bool(args.job), bool(args.tag)]
    if sum(selectors) != 1:
        return "name the links by CODE..., --job or --tag (one of them)"
    request: dict[str, Any] = {"action": args.action}
    if args.codes:
        request["codes"] = args.codes
    elif args.job:
        request["job_id"] = args.job
    else:
        request["tag"] = args.tag
    if args.action == "set":
        fields = link_fields(args)
        if not fields:
            return "set needs --expires-at, --max-clicks, --tags or --title"
        request["set"] = fields
    return request


def _batch(client: ShortenerClient, args: argparse.Namespace) -> int:
    """Start the batch, wait for it, print its outcome (every code's with --json)."""
    request = batch_request(args)
    if isinstance(request, str):
        print(f"shortener: {request}", file=sys.stderr)
        return EXIT_USAGE
    batch_id = client.start_batch(request)["batch_id"]
    deadline = time.monotonic() + args.timeout
    bar = _Bar(sys.stderr)
    while (status := client.batch(batch_id))["status"] == "running":
        bar.show(batch_progress(batch_id, status))
        if time.monotonic() >= deadline:
            bar.done()
            print(f"shortener: batch {batch_id} still running after {args.timeout:g} s", file=sys.stderr)
            return EXIT_REFUSED
        time.sleep(args.poll_interval)
    bar.done()
    outcomes = list(status["outcomes"])
    cursor = status.get("next_cursor")
    while cursor:
        page = client.batch(batch_id, cursor)
        outcomes += page["outcomes"]
        cursor = page.get("next_cursor")
    status = {**status, "outcomes": outcomes, "next_cursor": None}
    if args.json:
        print(output.as_json(status))
    else:
        print(
            f"batch {batch_id} {status['status']}: {output.count(status['total'], 'link')}, "
            f"{status['changed']:,} changed, {status['unchanged']:,} unchanged, {status['failed']:,} failed"
        )
        for outcome in outcomes:
            if outcome.get("message"):
                print(f"{outcome['code']}: {outcome['outcome']}: {outcome['message']}", file=sys.stderr)
        if status.get("error"):
            print(f"shortener: {status['error']}", file=sys.stderr)
    return EXIT_OK if status["status"] == "done" and not status["failed"] else EXIT_REFUSED


def batch_progress(batch_id: str, status: dict[str, Any]) -> str:
    """batch b1: 120 of 300 links done so far, 2 failed (running). A batch by tag or job counts its
    links as it reaches them, so the total grows while it runs."""
    done = sum(int(status.get(name) or 0) for name in ("changed", "unchanged", "failed"))
    return (
        f"batch {batch_id}: {done:,} of {output.count(int(status.get('total') or 0), 'link')} done so far, "
        f"{int(status.get('failed') or 0):,} failed ({status['status']})"
    )


def _shorten(client: ShortenerClient, args: argparse.Namespace) -> int:
    fields = link_fields(args) | ({"domain": args.domain} if args.domain else {})
    link = client.shorten(args.url, args.code, fields)
    print(output.as_json(link) if args.json else link["short_url"])
    return EXIT_OK


def _bulk(client: ShortenerClient, args: argparse.Namespace) -> int:
    try:
        size = args.file.stat().st_size
        data = args.file.read_bytes() if size <= SMALL_BODY_BYTES and not args.direct else b""
    except OSError as exc:
        print(f"shortener: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    if args.json and args.wait and not args.output:
        print("shortener: the results are CSV: with --json, name their file with --output", file=sys.stderr)
        return EXIT_USAGE
    check_folder(args.output)
    # The form's own lines count towards the API's limit too.
    if data and size + len(multipart_file(b"", args.file.name)[0]) <= SMALL_BODY_BYTES:
        job = client.upload(data, args.file.name, args.domain)
        print(
            f"job {job['job_id']}: {output.count(job['total'], 'row')} of {args.file.name}", file=sys.stderr
        )
    else:
        job = _upload_directly(client, args.file, size, sys.stderr, args.domain)
    if not (args.wait or args.output):
        print(output.as_json(job) if args.json else job["job_id"])
        return EXIT_OK
    return _results(client, job["job_id"], args)


def _upload_directly(
    client: ShortenerClient, path: Path, size: int, out: TextIO, domain: str | None = None
) -> dict[str, Any]:
    """POST /bulk/uploads, then the file straight to S3, with a bar for the bytes sent."""
    job = client.start_upload(path.name, size, domain)
    print(f"job {job['job_id']}: uploading {path.name} ({size / 1e6:,.1f} MB) straight to storage", file=out)
    bar = _Bar(out)
    client.put_file(job["upload"], path, lambda sent: bar.show(upload_bar(sent, size)))
    bar.done()
    return job


def _results(client: ShortenerClient, job_id: str, args: argparse.Namespace) -> int:
    """Wait for the job (unless told not to), then write its whole results CSV; with --json, the
    job's last status (the results go to --output then)."""
    if args.json and not args.output:
        print("shortener: the results are CSV: with --json, name their file with --output", file=sys.stderr)
        return EXIT_USAGE
    check_folder(args.output)
    deadline = time.monotonic() + args.timeout
    status = client.job(job_id)
    if not getattr(args, "no_wait", False):
        waited = _wait_for(client, job_id, args.timeout, args.poll_interval, sys.stderr)
        if waited is None:
            print(f"shortener: job {job_id} not done after {args.timeout:g} s", file=sys.stderr)
            return EXIT_REFUSED
        status = waited
    if args.output:
        write_whole(args.output, lambda out: client.save_results(job_id, out, deadline=deadline))
        print(f"results written to {args.output}", file=sys.stderr)
    else:
        client.save_results(job_id, sys.stdout.buffer, deadline=deadline)
        sys.stdout.flush()
    if args.json:
        print(output.as_json(status))
    if status.get("failed"):
        # Row errors (an invalid URL, a taken code) are results, not a failure of the job.
        failed = status["failed"]
        has = "has" if failed == 1 else "have"
        print(f"{output.count(failed, 'row')} {has} an error; see the error column", file=sys.stderr)
    if status.get("fallback_lines"):
        lines = output.count(status["fallback_lines"], "line")
        print(
            f"{lines} {'was' if status['fallback_lines'] == 1 else 'were'} not UTF-8 "
            f"and read as {status.get('fallback_encoding')}",
            file=sys.stderr,
        )
    if status.get("ignored_columns"):
        # Not an error (other tools' extra columns are common), but a misspelt column is seen here.
        print(
            f"columns not read (not url, code or a link attribute): {', '.join(status['ignored_columns'])}",
            file=sys.stderr,
        )
    if status.get("ended_early") or status.get("error"):
        # Rows after the point where reading stopped have no outcome: not a finished job.
        error = status.get("error") or {}
        print(
            f"shortener: job {job_id} ended early "
            f"({error.get('error', 'error')}): {error.get('message', '')}",
            file=sys.stderr,
        )
        return EXIT_ENDED_EARLY
    return EXIT_OK


def _clicks(client: ShortenerClient, args: argparse.Namespace) -> int:
    """``clicks CODE``: the link's report; ``clicks --job JOB``: the job's report CSV; ``clicks``:
    the caller's top links."""
    if args.job:
        if args.code:
            print("shortener: give a CODE or --job, not both", file=sys.stderr)
            return EXIT_USAGE
        return _job_clicks(client, args)
    if args.json and args.csv:
        print("shortener: --json or --csv, not both", file=sys.stderr)
        return EXIT_USAGE
    asked = {
        "from": args.start or "",
        "to": args.end or "",
        "tz": args.tz or "",
        "group_by": args.group_by or "",
        "bots": args.bots or "",
        **{name: getattr(args, name) or "" for name in ("country", "device", "browser", "os", "referrer")},
    }
    if args.export:
        file_format = {".jsonl": "jsonl", ".parquet": "parquet"}.get(args.export.suffix.lower(), "csv")
        query = {
            **asked,
            "group_by": "",
            "tz": "",
            "tag": args.tag or "",
            "code": args.code or "",
            "format": file_format,
        }
        with args.export.open("wb") as out:
            written = client.save_click_export(query, out, deadline=time.monotonic() + args.timeout)
        print(f"wrote {args.export} ({written:,} bytes)", file=sys.stderr)
        return EXIT_OK
    if not args.code:
        top = client.top_links(**asked, tag=args.tag or "")
        print(output.as_json(top) if args.json else format_top_links(top))
        return EXIT_OK
    report = client.link_clicks(args.code, **asked, interval=args.interval or "")
    if args.json:
        print(output.as_json(report))
    elif args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["start", "clicks", "humans"])
        for point in report["series"]:
            writer.writerow([point["start"], point["clicks"], point["humans"]])
    else:
        _print_link_clicks(report)
    return EXIT_OK


def format_top_links(top: dict[str, Any]) -> str:
    """The caller's clicks in a range, then a table of links, most followed first."""
    total = f"{output.count(top['total'], 'click')} ({output.count(top['humans'], 'human')})"
    if top.get("visitors") is not None:
        total += f", {output.count(top['visitors'], 'visitor')}"
    lines = [f"{total} from {top['from']} to {top['to']}"]
    if top["links"]:
        lines.append(
            output.table(
                ("CLICKS", "HUMANS", "SHORT URL"),
                ((f"{link['clicks']:,}", f"{link['humans']:,}", link["short_url"]) for link in top["links"]),
            )
        )
    lines += _group_lines(top.get("groups"))
    return "\n".join(lines)


def _group_lines(groups: list[dict[str, Any]] | None) -> list[str]:
    """A breakdown (--group-by) as a table, most clicks first."""
    if not groups:
        return []
    rows = (
        (
            str(group["value"] if group["value"] is not None else "-"),
            f"{group['clicks']:,}",
            f"{group['humans']:,}",
            f"{group['visitors']:,}",
        )
        for group in groups
    )
    return [output.table(("VALUE", "CLICKS", "HUMANS", "VISITORS"), rows)]


def _print_link_clicks(report: dict[str, Any]) -> None:
    counts = ", ".join((output.count(report["humans"], "human"), output.count(report["bots"], "bot")))
    visitors = (
        f", {output.count(report['visitors'], 'visitor')}" if report.get("visitors") is not None else ""
    )
    zone = f" in {report['tz']}" if report.get("tz", "UTC") != "UTC" else ""
    print(
        f"{report['code']}: {output.count(report['total'], 'click')} ({counts}){visitors} "
        f"from {report['from']} to {report['to']}, by {report['interval']}{zone}"
    )
    for line in _group_lines(report.get("groups")):
        print(line)
    series = [point for point in report["series"] if point["clicks"]]
    if series:
        rows = ((point["start"], f"{point['clicks']:,}", f"{point['humans']:,}") for point in series)
        print(output.table(("START", "CLICKS", "HUMANS"), rows))
    for name in ("countries", "devices", "browsers", "os", "referrers", "destinations"):
        values = ", ".join(f"{entry['value']} {entry['clicks']}" for entry in report.get(name, []))
        print(f"{name}: {values or '-'}")


def _job_clicks(client: ShortenerClient, args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.timeout
    if args.json and not args.output:
        print("shortener: the click report is CSV: with --json, name its file with --output", file=sys.stderr)
        return EXIT_USAGE
    check_folder(args.output)
    if not args.output:
        client.save_job_clicks(args.job, sys.stdout.buffer, deadline=deadline)
        sys.stdout.flush()
        return EXIT_OK
    size = write_whole(args.output, lambda out: client.save_job_clicks(args.job, out, deadline=deadline))
    print(f"click report written to {args.output}", file=sys.stderr)
    if args.json:
        print(output.as_json({"job_id": args.job, "output": str(args.output), "bytes": size}))
    return EXIT_OK


class _Bar:
    """A progress line: redrawn in place on a terminal, one line per change in a log."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._redraw, self._end = ("\r", "") if out.isatty() else ("", "\n")
        self._shown = ""

    def show(self, text: str) -> None:
        if text != self._shown:
            self._out.write(self._redraw + text + self._end)
            self._out.flush()
            self._shown = text

    def done(self) -> None:
        if self._redraw:
            self._out.write("\n")
            self._out.flush()


def upload_bar(sent: int, size: int) -> str:
    """[#####.....] 12.0/45.3 MB uploaded"""
    filled = _BAR_WIDTH if size == 0 else min(_BAR_WIDTH, _BAR_WIDTH * sent // size)
    return f"[{'#' * filled}{'.' * (_BAR_WIDTH - filled)}] {sent / 1e6:,.1f}/{size / 1e6:,.1f} MB uploaded"


def _wait_for(
    client: ShortenerClient, job_id: str, timeout: float, interval: float, out: TextIO
) -> dict[str, Any] | None:
    """Poll the job until it is done, drawing a progress bar; None on timeout."""
    deadline = time.monotonic() + timeout
    bar = _Bar(out)
    while True:
        status = client.job(job_id)
        bar.show(progress_bar(status))
        if status.get("status") == "done" or time.monotonic() >= deadline:
            bar.done()
            return status if status.get("status") == "done" else None
        time.sleep(interval)


def progress_bar(status: dict[str, Any]) -> str:
    """One line: [#####.....] 600/1000 rows, 3 failed (running); while an uploaded file is still
    being read, how much of it: [###.......] file read 31% (splitting)."""
    upload = status.get("upload")
    if status.get("phase") in ("awaiting_upload", "splitting") and upload:
        size = int(upload.get("size") or 0)
        read = int(upload.get("bytes_read") or 0)
        filled = _BAR_WIDTH if size == 0 else min(_BAR_WIDTH, _BAR_WIDTH * read // size)
        percent = 100 if size == 0 else 100 * read // size
        done = int(status.get("succeeded") or 0) + int(status.get("failed") or 0)
        return (
            f"[{'#' * filled}{'.' * (_BAR_WIDTH - filled)}] file read {percent}%, "
            f"{done:,}/{output.count(int(status.get('total') or 0), 'row')} queued so far done "
            f"({status.get('phase')})"
        )
    total = int(status.get("total") or 0)
    done = int(status.get("succeeded") or 0) + int(status.get("failed") or 0)
    filled = _BAR_WIDTH if total == 0 else min(_BAR_WIDTH, _BAR_WIDTH * done // total)
    bar = "#" * filled + "." * (_BAR_WIDTH - filled)
    failed = int(status.get("failed") or 0)
    return f"[{bar}] {done:,}/{output.count(total, 'row')}, {failed:,} failed ({status.get('status')})"


def _domains(client: ShortenerClient, as_json: bool) -> int:
    found = client.domains()["domains"]
    if as_json:
        print(output.as_json(found))
        return EXIT_OK
    for domain in found:
        notes = [
            note
            for note, holds in (("default", domain["default"]), ("not yours", not domain["allowed"]))
            if holds
        ]
        print(f"{domain['name']}  {domain['short_url_base']}" + (f"  ({', '.join(notes)})" if notes else ""))
    return EXIT_OK


def _links(client: ShortenerClient, args: argparse.Namespace) -> int:
    """A page of links, or every page (--all); csv and jsonl are written page by page as they
    come (an export of any size), the table once all are read."""
    export = "jsonl" if args.json and args.format == "table" else args.format
    limit = args.limit or (1000 if args.all else 100)
    cursor, rows, first = "", [], True
    while True:
        page = client.links(
            tag=args.tag or "",
            q=args.search or "",
            owner=args.owner or "",
            domain=args.domain or "",
            limit=str(limit),
            cursor=cursor,
        )
        if export == "csv":
            sys.stdout.write(output.links_csv(page["links"], header=first))
        elif export == "jsonl":
            sys.stdout.write(output.links_jsonl(page["links"]))
        else:
            rows += page["links"]
        first = False
        cursor = page.get("next_cursor") or ""
        if not (args.all and cursor):
            break
    if export == "table":
        print(format_links(rows))
        if rows:
            print(output.count(len(rows), "link"), file=sys.stderr)
    if cursor:
        print("more links follow: --all lists every page", file=sys.stderr)
    return EXIT_OK


def format_links(links: list[dict[str, Any]]) -> str:
    """A table of links: short URL, status, creation date, target, title and tags."""
    if not links:
        return "No links."
    return output.table(
        ("SHORT URL", "STATUS", "CREATED", "URL", "TITLE", "TAGS"),
        (
            (
                link["short_url"],
                link["status"],
                link["created_at"][:10],
                link["url"],
                link.get("title") or "",
                ", ".join(link.get("tags") or []),
            )
            for link in links
        ),
    )


def _update(client: ShortenerClient, args: argparse.Namespace) -> int:
    changes = {
        **{key: value for key, value in (("url", args.url), ("status", args.status)) if value is not None},
        **link_fields(args),
    }
    if not changes:
        print(
            "shortener: nothing to change (--url, --title, --tags, --expires-at, --max-clicks, "
            "--disable or --enable)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return _show(client.update_link(args.code, changes), args.json)


def _show(fields: dict[str, Any], as_json: bool = False) -> int:
    print(output.as_json(fields) if as_json else output.aligned_fields(fields))
    return EXIT_OK


def _unblock(client: ShortenerClient, host: str, as_json: bool = False) -> int:
    client.unblock(host)
    print(output.as_json({"host": host, "blocked": False}) if as_json else f"{host} is no longer blocked")
    return EXIT_OK


def _blocklist(client: ShortenerClient, as_json: bool = False) -> int:
    hosts = client.blocklist()
    if as_json:
        print(output.as_json(hosts))
        return EXIT_OK
    for entry in hosts:
        reason = f"  ({entry['reason']})" if entry.get("reason") else ""
        print(f"{entry['host']}  blocked {entry['created_at'][:10]} by {entry['added_by']}{reason}")
    if not hosts:
        print("No blocked hosts.")
    return EXIT_OK


def _audit(client: ShortenerClient, args: argparse.Namespace) -> int:
    """The audit log's entries, newest first: a line each, or JSON lines with --json (an export)."""
    query = {
        "from": args.begin,
        "to": args.end,
        "actor": args.actor,
        "code": args.code,
        "action": args.action,
    }
    cursor = ""
    while True:
        page = client.audit(**{name: value for name, value in query.items() if value}, cursor=cursor)
        for entry in page["entries"]:
            if args.json:
                print(output.as_json_line(entry))
            else:
                where = f" from {entry['source_ip']}" if entry.get("source_ip") else ""
                print(f"{entry['time']}  {entry['actor']}  {entry['action']}  {entry['target']}{where}")
        cursor = page.get("next_cursor") or ""
        if not (args.all and cursor):
            return EXIT_OK


def _loops(args: argparse.Namespace) -> int:
    endpoint = (
        None if args.aws_endpoint == "aws" else args.aws_endpoint or local_aws_endpoint(args.local_stack)
    )
    try:
        dynamodb = dynamodb_client(endpoint, args.region)
        table = args.tokens_table or find_tokens_table(dynamodb)
        loops = list_loops(dynamodb, table)
        print(output.as_json([asdict(loop) for loop in loops]) if args.json else format_loops(loops))
    except LookupError as exc:
        print(f"shortener: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (BotoCoreError, ClientError) as exc:
        print(f"shortener: cannot read the loops: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    return EXIT_OK


def local_aws_endpoint(data_dir: str | None) -> str:
    """The embedded AWS of the running local stack (`make run` may have put it on another port than
    3001), else the default port."""
    found = local_stacks(data_dir)
    return str(found[0].info.get("aws_endpoint") or DEFAULT_AWS_ENDPOINT) if found else DEFAULT_AWS_ENDPOINT


def _keys(args: argparse.Namespace) -> int:
    try:
        if args.stack:
            target = keys.deployed_target(args.stack, args.region)
        else:
            found = local_stacks(args.local_stack)
            if not found:
                print(
                    "shortener: no running local stack found (start one with make run, pass --local-stack "
                    "DATA_DIR, or --stack NAME for a deployed stack)",
                    file=sys.stderr,
                )
                return EXIT_UNREACHABLE
            target = keys.local_target(found[0])
        manager = target.manager()
        if args.keys_command == "create":
            created = manager.create(args.name, args.owner, args.role, args.domains)
            record = created.record
            print(
                f"Key {record.key_id} ({record.name!r}, owner {record.owner_id}, {record.role}) created on "
                f"{target.stack_name}. It is shown only now: keep it somewhere safe.",
                file=sys.stderr,
            )
            print(output.as_json({"key": created.key, **keys.key_view(record)}) if args.json else created.key)
        elif args.keys_command == "list":
            found = manager.list()
            print(
                output.as_json([keys.key_view(key) for key in found])
                if args.json
                else keys.format_keys(found)
            )
        else:
            record = manager.revoke(args.key_id)
            print(
                output.as_json(keys.key_view(record))
                if args.json
                else f"Key {record.key_id} ({record.name!r}, owner {record.owner_id}) is revoked from now on."
            )
    except InvalidKeyRequestError as exc:
        print(f"shortener: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except (ShortenerError, keys.TargetError) as exc:
        print(f"shortener: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return EXIT_REFUSED
    except (BotoCoreError, ClientError) as exc:
        print(f"shortener: AWS refused or could not be reached: {exc}", file=sys.stderr)
        return EXIT_REFUSED if isinstance(exc, ClientError) else EXIT_UNREACHABLE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
