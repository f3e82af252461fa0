"""The command-line client against one local stack started as `make run ARGS="--api-port 0"` starts
it (a free port, not 3000): it finds the stack by itself from where the stack keeps its data, stays
quiet when its reader goes away, and its ``--json`` answers parse.

The CLI runs as a person runs it: `.venv/bin/shortener` in a folder laid out like a checkout with
`make run` going (the stack's data dir as ``.local-stack/``), with no flag, variable or config file
that names the API or its key."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import PROJECT_ROOT, RunningStack

SHORTENER = Path(sys.executable).parent / "shortener"
# Enough links that their JSON lines overflow a pipe's buffer (64 KiB) after `head` has gone.
PIPE_LINKS = 600


@pytest.fixture(scope="module")
def checkout(stack: RunningStack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where `shortener` finds the stack as it finds `make run`'s: ./.local-stack."""
    folder = tmp_path_factory.mktemp("checkout")
    (folder / ".local-stack").symlink_to(stack.data_dir)
    return folder


def shortener(checkout: Path, *args: str, shell_pipe: str = "") -> subprocess.CompletedProcess[str]:
    """`shortener ARGS` (optionally piped into ``shell_pipe``, the pipeline failing when the CLI
    does) run in ``checkout``."""
    command = [str(SHORTENER), *args]
    if shell_pipe:
        command = ["bash", "-c", f"set -o pipefail; {shlex.join(command)} | {shell_pipe}"]
    return run(command, checkout)


def run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """``command`` run in ``folder`` with nothing of this machine's shortener setup."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SHORTENER_")}
    env["SHORTENER_CONFIG"] = str(folder / "no-such-config.toml")
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_shorten_finds_a_stack_on_another_port_with_no_flags(stack: RunningStack, checkout: Path) -> None:
    # Given a stack whose API is not on the default port
    assert not stack.api_url.endswith(":3000/")
    # When a URL is shortened with no flag, variable or config naming the API or its key
    done = shortener(checkout, "shorten", "https://example.com/cli-e2e")
    # Then the stack's own API answered it, with the stack's key
    assert done.returncode == 0, done.stderr
    short_url = done.stdout.strip()
    assert short_url.startswith(stack.edge_url)
    answer = stack.request("GET", short_url.removeprefix(stack.edge_url), api_key=None)
    assert (answer.status, answer.headers["Location"]) == (301, "https://example.com/cli-e2e")


def test_the_banners_try_line_works(stack: RunningStack) -> None:
    # Given the banner's own line (this stack's data dir is not the default: the line names it)
    [line] = [line.strip() for line in stack.log().splitlines() if " shorten https://" in line]
    assert "--local-stack" in line
    # When it is run as printed, from the checkout, with nothing else naming the stack
    done = run(["bash", "-c", line], PROJECT_ROOT)
    # Then it shortens on this stack
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(stack.edge_url)


def test_json_answers_parse_and_carry_the_links_fields(stack: RunningStack, checkout: Path) -> None:
    # When a link is made with its fields and read back, as JSON
    fields = ["--title", "Spring", "--tags", "spring,cli", "--max-clicks", "5"]
    made = shortener(checkout, "--json", "shorten", "https://example.com/cli-json", *fields)
    assert made.returncode == 0, made.stderr
    code = json.loads(made.stdout)["code"]
    shown = shortener(checkout, "--json", "link", code)
    # Then each answer is one JSON document holding what was asked for
    link = json.loads(shown.stdout)
    assert (link["title"], sorted(link["tags"]), link["max_clicks"]) == ("Spring", ["cli", "spring"], 5)
    clicks = json.loads(shortener(checkout, "--json", "clicks", code).stdout)
    assert clicks["code"] == code and clicks["total"] == 0
    assert isinstance(json.loads(shortener(checkout, "--json", "clicks").stdout)["links"], list)
    # And an upload is listed by its file's name
    upload = checkout / "spring-campaign.csv"
    upload.write_text("url\nhttps://example.com/cli-upload\n")
    job = json.loads(shortener(checkout, "--json", "bulk", str(upload)).stdout)
    status = json.loads(shortener(checkout, "--json", "job", job["job_id"]).stdout)
    assert status["file_name"] == "spring-campaign.csv"


def test_a_closed_pipe_ends_the_export_quietly(stack: RunningStack, checkout: Path) -> None:
    # Given more links than a pipe holds
    links = [{"url": f"https://example.com/cli-pipe/{n}"} for n in range(PIPE_LINKS)]
    assert stack.post_json("links/bulk", {"links": links}).status == 200
    # When the export is piped into `head -1`: as one write, and page after page (so that pages are
    # surely written after `head` has gone)
    for pages in ([], ["--limit", "100"]):
        done = shortener(checkout, "links", "--all", *pages, "--format", "jsonl", shell_pipe="head -1")
        # Then one line came through, and the CLI exited 0 with nothing on stderr
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        assert json.loads(done.stdout)["short_url"].startswith(stack.edge_url)
