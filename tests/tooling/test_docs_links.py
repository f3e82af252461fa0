"""Every relative link of the README, CONTRIBUTING.md and docs/*.md leads somewhere: its file or
folder exists, and its anchor (``#access``) is a heading of the page it names, spelt as GitHub
makes anchors of headings. Links to other sites are not followed."""

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose(markdown: str) -> list[str]:
    """The page's lines outside fenced code blocks, with inline code taken out."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered (-1, -2, ...)."""
    seen: Counter[str] = Counter()
    found = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if not match:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2))  # a link's text only
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return found


def broken_links(page: Path) -> list[str]:
    """The page's relative links whose file or anchor does not exist, each with why."""
    broken = []
    for line in prose(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if EXTERNAL.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                broken.append(f"{target}: no such file")
            elif anchor and linked.suffix != ".md":
                broken.append(f"{target}: an anchor into a file that is not markdown")
            elif anchor and anchor not in anchors(linked.read_text(encoding="utf-8")):
                broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert page.exists()
    assert broken_links(page) == []


def test_every_docs_page_is_linked_from_the_readme() -> None:
    # Given the README's relative links
    readme = ROOT / "README.md"
    linked = {
        (readme.parent / target.partition("#")[0]).resolve()
        for line in prose(readme.read_text(encoding="utf-8"))
        for target in LINK.findall(line)
        if not EXTERNAL.match(target)
    }
    # Then every docs page, the local stack's README and CONTRIBUTING.md are among them
    expected = {*(ROOT / "docs").glob("*.md"), ROOT / "local_stack" / "README.md", ROOT / "CONTRIBUTING.md"}
    assert sorted(map(str, expected - linked)) == []
    assert len(list((ROOT / "docs").glob("*.md"))) >= 5


def test_anchors_are_made_as_github_makes_them() -> None:
    page = "# The whole path: deploy, key\n## `Access=open`\n## Codes, a domain\n## Codes, a domain\n"
    assert anchors(page) == {
        "the-whole-path-deploy-key",
        "accessopen",
        "codes-a-domain",
        "codes-a-domain-1",
    }


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    # Given a page with a missing file, a missing anchor, a good link and links in code
    (tmp_path / "other.md").write_text("# Other page\n## Access\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n[ok](other.md#access) [self](#page) [web](https://example.com/#x)\n"
        "[gone](missing.md) [no anchor](other.md#keys) [here](#nowhere)\n"
        "`[in code](missing.md)`\n```\n[in a block](missing.md)\n```\n",
        encoding="utf-8",
    )
    # Then exactly the three broken ones are reported
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#keys: no heading #keys in other.md",
        "#nowhere: no heading #nowhere in page.md",
    ]
