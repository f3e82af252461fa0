"""The code's shape: no import cycle of any length among the local stack's modules, and no benchmark
that imports the tests (what both need lives in local_stack.harness or benchmarks/)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, at any depth of the file (inside
    functions and ``if TYPE_CHECKING:`` too: a cycle through either is still a cycle to read)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            # `from package import module` imports that module.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def import_graph(package: Path, root: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports. Importing a module runs its packages'
    ``__init__``, so those count as imported too."""
    modules = {module_name(path, root): path for path in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for imported in imported_modules(path, root):
            parts = imported.split(".")
            for end in range(1, len(parts) + 1):
                candidate = ".".join(parts[:end])
                if candidate in modules and candidate != name and not name.startswith(candidate + "."):
                    edges.add(candidate)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of modules (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for following in sorted(graph.get(node, ())):
            if state.get(following) == 1:
                return [*path[path.index(following) :], following]
            if following not in state and (cycle := visit(following)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


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
    from local_stack.embedded.patches import PATCHES

    listed = {(patch.install.__module__, patch.install.__name__) for patch in PATCHES}
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
