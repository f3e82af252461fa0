"""The code's shape: no import cycle of any length among the local stack's modules, nor among its
packages (one per AWS service: a package may use another only if that one does not use it back),
no function in local_stack/ over 120 lines, and no benchmark that imports the tests (what both need
lives in local_stack.harness or benchmarks/)."""

import ast
from pathlib import Path

import pytest

from tests.support.structure import (
    ROOT,
    find_cycle,
    functions_longer_than,
    import_graph,
    imported_modules,
    module_name,
)

LONGEST_FUNCTION = 120  # lines, in local_stack/


def package_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The module graph collapsed to ``package``'s top-level parts: ``local_stack.dynamodb.state``
    is ``dynamodb``, the module ``local_stack.stack`` is ``stack``; an import inside one part is no
    edge."""

    def part(module: str) -> str:
        names = module.split(".")
        return names[1] if len(names) > 1 and names[0] == package else module

    collapsed: dict[str, set[str]] = {}
    for module, imported in graph.items():
        edges = collapsed.setdefault(part(module), set())
        edges.update(part(other) for other in imported if part(other) != part(module))
    return collapsed


def test_local_stack_has_no_import_cycle() -> None:
    graph = import_graph(ROOT / "local_stack", ROOT)
    assert "local_stack.stack" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_local_stacks_packages_use_each_other_one_way() -> None:
    packages = package_graph(import_graph(ROOT / "local_stack", ROOT), "local_stack")
    assert {"dynamodb", "embedded", "cloudformation", "stack"} <= packages.keys()
    cycle = find_cycle(packages)
    assert cycle is None, "packages that import each other: " + " -> ".join(cycle or [])


def test_the_package_check_finds_a_cycle_that_no_two_modules_close(tmp_path: Path) -> None:
    # Given two packages whose modules import each other's other modules: no module cycle.
    for name in ("pkg", "pkg/a", "pkg/b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a" / "x.py").write_text("from pkg.b import y\n")
    (tmp_path / "pkg" / "b" / "y.py").write_text("import pkg.a.z\n")
    (tmp_path / "pkg" / "a" / "z.py").write_text("z = 1\n")
    graph = import_graph(tmp_path / "pkg", tmp_path)
    assert find_cycle(graph) is None
    # Then the packages' graph has one.
    assert find_cycle(package_graph(graph, "pkg")) == ["a", "b", "a"]
    # And without the import back, none.
    (tmp_path / "pkg" / "b" / "y.py").write_text("y = 1\n")
    assert find_cycle(package_graph(import_graph(tmp_path / "pkg", tmp_path), "pkg")) is None


def test_no_function_of_the_local_stack_is_over_120_lines() -> None:
    assert list(functions_longer_than(ROOT / "local_stack", LONGEST_FUNCTION)) == []


def test_the_length_check_finds_a_function_over_the_limit(tmp_path: Path) -> None:
    body = "".join(f"    x{line} = {line}\n" for line in range(LONGEST_FUNCTION - 1))
    (tmp_path / "fits.py").write_text("def fits():\n" + body)
    assert list(functions_longer_than(tmp_path, LONGEST_FUNCTION, tmp_path)) == []
    (tmp_path / "long.py").write_text("@decorated\ndef long():\n" + body)
    assert list(functions_longer_than(tmp_path, LONGEST_FUNCTION, tmp_path)) == [
        f"long.py:2 long ({LONGEST_FUNCTION + 1} lines)"
    ]


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
