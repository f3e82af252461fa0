"""The code's shape: no import cycle of any length among the local stack's modules, and no benchmark
that imports the tests (what both need lives in local_stack.harness or benchmarks/)."""

import ast
from pathlib import Path

import pytest

from tests.support.structure import ROOT, find_cycle, import_graph, imported_modules, module_name


def test_local_stack_has_no_import_cycle() -> None:
    graph = import_graph(ROOT / "local_stack", ROOT)
    assert "local_stack.stack" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle_through_a_relative_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..c import x\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
    )
    assert find_cycle(import_graph(package, tmp_path)) == ["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]
    (package / "c.py").write_text("x = 1\n")
    assert find_cycle(import_graph(package, tmp_path)) is None


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks").rglob("*.py")), ids=lambda p: p.name)
def test_no_benchmark_imports_the_tests(path: Path) -> None:
    imported = imported_modules(path, ROOT)
    assert not [name for name in imported if name == "tests" or name.startswith("tests.")]


def test_every_moto_patch_is_listed_in_one_place() -> None:
    from local_stack.patches import PATCHES

    listed = {
        (function.__module__, function.__name__)
        for patch in PATCHES
        for function in (patch.install, patch.wraps)
        if function is not None
    }
    found: set[tuple[str, str]] = set()
    for path in (ROOT / "local_stack").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(name == "moto" or name.startswith("moto.") for name in imported_modules(path, ROOT)):
            continue
        found.update(
            (module_name(path, ROOT), node.name)
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("install")
        )
    assert found
    assert found - {("local_stack.embedded.server", "install_moto_fixes")} <= listed
