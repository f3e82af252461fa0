"""The README's shell examples, pasted in order as a newcomer would: every ```sh block runs in one bash
session (``set -euo pipefail``) from a directory laid out like a fresh clone (``.venv/``,
``.local-stack/``), against a local stack of its own. A block is left out only when its fence says
why (``sh aws``: needs an AWS account; ``sh setup``: `make run` / `make test`, which this test is
run by or does itself); any other shell fence fails the test, so no example goes untested silently."""

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import PROJECT_ROOT, StartStack

README = PROJECT_ROOT / "README.md"
RUN = "sh"
EXCLUDED = {"sh aws": "needs an AWS account", "sh setup": "starts the stack or the whole test suite"}
# Fences a reader would take for shell: each must be one of the above.
SHELL_LANGUAGES = {"sh", "bash", "shell", "console", "zsh", "shell-session"}
BLOCK_MARK = "=== README block at line "


@dataclass(frozen=True)
class Block:
    """A fenced code block of the README: its info string, first line number and text."""

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
    assert info is None, f"README.md: the block at line {start} is never closed"
    return blocks


def shell_blocks(markdown: str) -> list[Block]:
    """The blocks whose fence names a shell language."""
    return [block for block in fenced_blocks(markdown) if block.info.split(" ")[0] in SHELL_LANGUAGES]


def test_every_shell_block_is_run_or_excluded_with_its_reason() -> None:
    # Given the README's shell blocks
    blocks = shell_blocks(README.read_text(encoding="utf-8"))
    # Then each is run (```sh) or says why it is not (```sh aws, ```sh setup)
    unmarked = [
        f"line {block.line}: ```{block.info}" for block in blocks if block.info not in {RUN, *EXCLUDED}
    ]
    assert not unmarked, f"shell blocks neither run nor excluded with a reason: {unmarked}"
    assert sum(block.info == RUN for block in blocks) >= 5


def test_an_unmarked_shell_block_is_found() -> None:
    # Given a page with a bash block that has no marker (the check above must be able to fail)
    page = "text\n```bash\necho hi\n```\n```sh aws\nmake deploy\n```\n```\nplain output\n```\n"
    # When its shell blocks are read
    blocks = shell_blocks(page)
    # Then the bash block is among them, with its info string, and the output block is not
    assert [(block.info, block.line) for block in blocks] == [("bash", 2), ("sh aws", 5)]


def readme_script(markdown: str) -> str:
    """The runnable blocks as one bash script, each announced by a line naming where it is."""
    parts = ["set -euo pipefail"]
    for block in shell_blocks(markdown):
        if block.info == RUN:
            parts += [f"echo '{BLOCK_MARK}{block.line}'", block.text]
    return "\n".join(parts) + "\n"


@pytest.mark.e2e_timeout(420)
def test_the_readme_examples_run_in_order_on_a_fresh_clone(start_stack: StartStack, tmp_path: Path) -> None:
    # Given a local stack and a directory laid out like a fresh clone with `make run` going
    stack = start_stack()
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".venv").symlink_to(PROJECT_ROOT / ".venv")
    (clone / ".local-stack").symlink_to(stack.data_dir)
    script = clone / "readme.sh"
    script.write_text(readme_script(README.read_text(encoding="utf-8")), encoding="utf-8")
    # The README's defaults (port 3000, the CLI's own discovery) pointed at this stack's free ports;
    # nothing of the caller's own shortener setup leaks in.
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("SHORTENER_") and name not in {"API", "KEY", "AWS_ENDPOINT_URL"}
    }
    env |= {
        "API": stack.api_url.rstrip("/"),
        "SHORTENER_API_URL": stack.api_url,
        "SHORTENER_CONFIG": str(tmp_path / "no-config.toml"),
    }

    # When its blocks run in order in one bash session
    completed = subprocess.run(
        ["bash", str(script)],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=360,
        check=False,
    )
    output = completed.stdout

    # Then every block exits 0 ...
    started = re.findall(re.escape(BLOCK_MARK) + r"(\d+)", output)
    failed = started[-1] if started else "?"
    assert completed.returncode == 0, (
        f"README.md block at line {failed} exited {completed.returncode}:\n{output[-4000:]}"
    )
    # ... a link is created (201) and followed (301 with its Location) ...
    assert re.search(r"^201$", output, re.MULTILINE)
    assert re.search(r"HTTP/1.1 301 .*\r?\nLocation: https://example.com/a/long/path", output, re.DOTALL)
    # ... the bulk job is done with one outcome per row, and the big file's results are whole ...
    assert re.search(r'"status":"done","phase":"[a-z_]+","total":3,"succeeded":2,"failed":1', output)
    assert f"2,https://example.com/2,spring-sale,{stack.api_url}spring-sale," in output
    assert "3,not a url,,,invalid_url: Not a valid absolute URL: not a url" in output
    assert re.search(r"^\s*2001$", output, re.MULTILINE)
    assert len((clone / "catalogue-results.csv").read_text(encoding="utf-8").splitlines()) == 2001
    # ... a member sees none of the admin's links, and a takedown answers 410, a blocked host 400
    assert "No links." in output
    assert re.search(r"^410$", output, re.MULTILINE)
    assert '"error": "blocked_host"' in output and "} 400" in output
