"""Reading the code's shape from its source, for the structure tests: imports as a graph, cycles in
it, and functions by length. Nothing here imports or runs the code it reads."""

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# The shortener's adapters (the only modules that may import boto3, shortener/__init__.py): named for
# what they talk to, in any domain package.
ADAPTER_NAMES = (
    "store",
    "bucket",
    "events_bus",
    "invoke",
    "queue",
    "queue_metrics",
    "stage_cache",
    "usage_plans",
)
SHARED_ADAPTERS = ("shortener.aws", "shortener.aws_serializer", "shortener.aws_usage")


def is_adapter(module: str) -> bool:
    """Whether ``module`` (dotted) is one of the shortener's AWS adapters, or inside one."""
    parts = module.split(".")
    if parts[0] != "shortener" or parts[1:2] == ["services"]:
        return False
    if any(module == name or module.startswith(name + ".") for name in SHARED_ADAPTERS):
        return True
    return any(part in ADAPTER_NAMES or part.startswith("store_") for part in parts[2:])


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


def functions_longer_than(folder: Path, limit: int, root: Path = ROOT) -> Iterator[str]:
    """``path:line name (N lines)`` for every function or method under ``folder`` longer than
    ``limit`` lines, its decorators, docstring and nested definitions included."""
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - start + 1
                if length > limit:
                    yield f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)"
