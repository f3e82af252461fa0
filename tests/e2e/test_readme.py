"""The shell examples of the README and of docs/*.md, pasted in order as a newcomer would: every ```sh
block of a page runs in one bash session (``set -euo pipefail``) from a directory laid out like a
fresh clone (``.venv/``, ``.local-stack/``), against a local stack: the README's against a stack of
its own, the docs pages' (each in its own session) against one stack they share. A block is left
out only when its fence says why (``sh aws``: needs an AWS account; ``sh setup``: `make run` /
`make test`, which this test is run by or does itself; ``sh dev``: runs tests, linters or
benchmarks); any other shell fence fails the test, so no example goes untested silently."""

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import PROJECT_ROOT, RunningStack, StartStack

README = PROJECT_ROOT / "README.md"
DOCS = sorted((PROJECT_ROOT / "docs").glob("*.md"))
# Every page whose shell blocks a reader may paste; only the README and docs/ are run.
PAGES = [README, *DOCS, PROJECT_ROOT / "CONTRIBUTING.md"]
RUN = "sh"
EXCLUDED = {
    "sh aws": "needs an AWS account",
    "sh setup": "starts the stack or the whole test suite",
    "sh dev": "runs tests, linters or benchmarks: the suite itself",
}
# Fences a reader would take for shell: each must be one of the above.
SHELL_LANGUAGES = {"sh", "bash", "shell", "console", "zsh", "shell-session"}
BLOCK_MARK = "=== block at line "


@dataclass(frozen=True)
class Block:
    """A fenced code block of a page: its info string, first line number and text."""

    info: str
    line: int
    text: str


def fenced_blocks(markdown: str) -> list[Block]:
    """Every fenced block (``` at the start of a line), in order."""
    blocks, info, start, lines = [], None, 0, []
    for number, line in enumerate(markdown.splitlines(), start=1):
        if info is None:
            if line.startswith("```"):
                info, start, lines = line[3:].strip(), number, []
        elif line.strip() == "```":
            blocks.append(Block(info, start, "\n".join(lines)))
            info = None
        else:
            lines.append(line)
    assert info is None, f"the block at line {start} is never closed"
    return blocks


def shell_blocks(markdown: str) -> list[Block]:
    """The blocks whose fence names a shell language."""
    return [block for block in fenced_blocks(markdown) if block.info.split(" ")[0] in SHELL_LANGUAGES]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(PROJECT_ROOT).as_posix())
def test_every_shell_block_is_run_or_excluded_with_its_reason(page: Path) -> None:
    # Given a page's shell blocks
    blocks = shell_blocks(page.read_text(encoding="utf-8"))
    # Then each is run (```sh) or says why it is not (```sh aws, ```sh setup, ```sh dev)
    unmarked = [
        f"line {block.line}: ```{block.info}" for block in blocks if block.info not in {RUN, *EXCLUDED}
    ]
    assert not unmarked, f"{page.name}: shell blocks neither run nor excluded with a reason: {unmarked}"


def test_the_readme_runs_the_whole_path_and_contributing_runs_nothing() -> None:
    # The README's path is mostly runnable; CONTRIBUTING's commands are the suite itself, and
    # this test does not run that page (a plain ```sh block there would silently go unrun).
    assert sum(block.info == RUN for block in shell_blocks(README.read_text(encoding="utf-8"))) >= 5
    contributing = shell_blocks((PROJECT_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert contributing and not [block.line for block in contributing if block.info == RUN]


def test_an_unmarked_shell_block_is_found() -> None:
    # Given a page with a bash block that has no marker (the check above must be able to fail)
    page = "text\n```bash\necho hi\n```\n```sh aws\nmake deploy\n```\n```\nplain output\n```\n"
    # When its shell blocks are read
    blocks = shell_blocks(page)
    # Then the bash block is among them, with its info string, and the output block is not
    assert [(block.info, block.line) for block in blocks] == [("bash", 2), ("sh aws", 5)]


def page_script(markdown: str) -> str:
    """The runnable blocks as one bash script, each announced by a line naming where it is."""
    parts = ["set -euo pipefail"]
    for block in shell_blocks(markdown):
        if block.info == RUN:
            parts += [f"echo '{BLOCK_MARK}{block.line}'", block.text]
    return "\n".join(parts) + "\n"


@dataclass(frozen=True)
class Run:
    """A page's script run to its end: the exit status, its output and the clone it ran in."""

    returncode: int
    output: str
    clone: Path

    def failed_block(self) -> str:
        started = re.findall(re.escape(BLOCK_MARK) + r"(\d+)", self.output)
        return started[-1] if started else "?"


def run_page(page: Path, stack: RunningStack, directory: Path, timeout: float) -> Run:
    """Run a page's ```sh blocks in order in one bash session, from a directory laid out like a fresh
    clone with `make run` going (this stack's data as ``.local-stack/``)."""
    clone = directory / "clone"
    clone.mkdir(parents=True)
    (clone / ".venv").symlink_to(PROJECT_ROOT / ".venv")
    (clone / ".local-stack").symlink_to(stack.data_dir)
    script = clone / "page.sh"
    script.write_text(page_script(page.read_text(encoding="utf-8")), encoding="utf-8")
    # The pages' defaults (port 3000) pointed at this stack's free ports;
    # nothing of the caller's own shortener setup leaks in.
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("SHORTENER_") and name not in {"API", "KEY", "AWS_ENDPOINT_URL"}
    }
    # The CLI finds the stack by itself, by its stack.json in ./.local-stack.
    env |= {"API": stack.api_url.rstrip("/"), "SHORTENER_CONFIG": str(directory / "no-config.toml")}
    completed = subprocess.run(
        ["bash", str(script)],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(completed.returncode, completed.stdout, clone)


@pytest.mark.e2e_timeout(420)
def test_the_readme_examples_run_in_order_on_a_fresh_clone(start_stack: StartStack, tmp_path: Path) -> None:
    # Given a local stack and a directory laid out like a fresh clone with `make run` going
    stack = start_stack()

    # When the README's blocks run in order in one bash session
    run = run_page(README, stack, tmp_path, timeout=360)
    output, clone = run.output, run.clone

    # Then every block exits 0 ...
    assert run.returncode == 0, (
        f"README.md block at line {run.failed_block()} exited {run.returncode}:\n{output[-4000:]}"
    )
    # ... a link is created (201) and followed (301 with its Location) ...
    assert re.search(r"^201$", output, re.MULTILINE)
    assert re.search(r"HTTP/1.1 301 .*\r?\nLocation: https://example.com/a/long/path", output, re.DOTALL)
    # ... the bulk job is done with one outcome per row, and the big file's results are whole ...
    assert re.search(r'"status":"done","phase":"[a-z_]+","total":3,"succeeded":2,"failed":1', output)
    assert f"2,https://example.com/2,spring-sale,{stack.edge_url}spring-sale," in output
    # ... and the edge answers a repeat follow from its cache ...
    assert re.search(r"x-cache: Miss from cloudfront.*x-cache: Hit from cloudfront", output, re.I | re.S)
    assert "3,not a url,,,invalid_url: Not a valid absolute URL: not a url" in output
    assert re.search(r"^\s*2001$", output, re.MULTILINE)
    assert len((clone / "catalogue-results.csv").read_text(encoding="utf-8").splitlines()) == 2001
    # ... a member sees none of the admin's links, and a takedown answers 410, a blocked host 400
    assert "No links." in output
    assert re.search(r"^410$", output, re.MULTILINE)
    assert '"error": "blocked_host"' in output and "} 400" in output


# What each docs page's examples print when they work (besides every block exiting 0).
DOCS_EXPECTED = {
    "deploy.md": [
        r"^api_url http://127\.0\.0\.1:\d+/$",
        r"^LinksTableName shortener-local-LinksTable$",
        r"^BulkQueueUrl http://127\.0\.0\.1:\d+/\d+/shortener-local-BulkQueue$",
    ],
    "api-json.md": [
        r"^OpenAPI 3\.1\.\d+ \d+ paths$",
        r'^\{"links":\[\{"status":201,"code":"\w+","short_url":"http://127\.0\.0\.1:\d+/\w+".* 200$',
        r"^code,short_url,domain,url,title,tags,status,created_at,updated_at,owner,is_custom,job_id,ios_url,android_url,"
        r"geo,variants,utm_source,utm_medium,utm_campaign,utm_term,utm_content,forward_query,"
        r"has_password,preview_title,preview_description,preview_image$",
        r'^\{"code": "[^"]+", "short_url": ',
    ],
    "capacity.md": [r'"settings": "scale=1"', r'"shortener-local-LinksTable": \{"write_units": '],
    "operations.md": [r"^\S+-DeadLetterAlarm (OK|INSUFFICIENT_DATA)$", r"^\S+-FunctionErrorsAlarm "],
    "api.md": [
        r'"error": "missing_api_key".* 403$',
        r'"error": "invalid_url".* 400$',
        r'"short_url": ?"http://127\.0\.0\.1:\d+/api-doc-\d+".* 201$',
        r'"status": ?"disabled".* 200$',
        r"^410$",
        r'"status": ?"deleted".* 200$',
        r" 409$",
    ],
    "clicks.md": [
        r'"total":1,"humans":1,"bots":0,',
        r'"browsers":\[\{"value":"Firefox","clicks":1\}\]',
        r"^\S+: 1 click \(1 human, 0 bots\), 1 visitor from ",
        r"^browsers: Firefox 1$",
        r"^start,clicks,humans$",
        r"^\d+ clicks? \(\d+ humans?\), \d+ visitors? from ",
        r"^\S+: .* by week in Europe/Berlin$",
        r"^Firefox +1 +1 +1$",
        r"^time,code,job_id,row,destination,status,country,device,browser,os,referrer,bot,visitor$",
        r'^\{"time":"\d{4}-\d\d-\d\dT[\d:.]+Z","code":"[^"]+","job_id":null,"row":null,',
    ],
    "campaign-links.md": [
        r"^301\n301\n410$",
        r'"max_clicks":2,"clicks_left":0,"expired":true',
        r'"message": "expires_at: must be in the future"\} 422$',
        r'"clicks_left":1,.*"expired":false',
        r"^200 image/png$",
        r"^<svg",
        r"^\['1-\w+\.png', '2-\w+\.png'\]$",
        r"^page\.csv$",
        r"^\['Spring flyer'\]$",
        r"^202$",
        r'"total":2,"changed":2,',
        r"^410$",
        r"^batch [0-9a-f]{32} done: 2 links, 2 changed, 0 unchanged, 0 failed$",
        r"^301$",
    ],
}
DOCS_RUN = [
    page
    for page in DOCS
    if any(block.info == RUN for block in shell_blocks(page.read_text(encoding="utf-8")))
]


def test_every_docs_page_with_examples_says_what_they_print() -> None:
    # A page's examples are checked by what they print, not only by exiting 0
    assert sorted(page.name for page in DOCS_RUN) == sorted(DOCS_EXPECTED)


@pytest.mark.e2e_timeout(240)
@pytest.mark.parametrize("page", DOCS_RUN, ids=lambda page: page.name)
def test_the_docs_examples_run_in_order(page: Path, stack: RunningStack, tmp_path: Path) -> None:
    # Given the docs pages' shared local stack and a fresh clone
    # When the page's blocks run in order in one bash session
    run = run_page(page, stack, tmp_path, timeout=180)
    # Then every block exits 0 and prints what the page says it does
    assert run.returncode == 0, (
        f"docs/{page.name} block at line {run.failed_block()} exited {run.returncode}:\n{run.output[-4000:]}"
    )
    missing = [
        pattern for pattern in DOCS_EXPECTED[page.name] if not re.search(pattern, run.output, re.MULTILINE)
    ]
    assert not missing, f"docs/{page.name} printed none of {missing}:\n{run.output[-4000:]}"
