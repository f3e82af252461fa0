"""The shortener's layer by domain, read from its source: every module of shared/shortener sits in
a domain package or is listed shared vocabulary; no function is longer than 120 lines in shared/,
functions/ or shortener_cli/; and no handler takes a store from shortener.services (a services
function that hands out an adapter), so a route calls one service and never data access."""

import ast
from pathlib import Path

import pytest

from tests.support.structure import ROOT, functions_longer_than, imported_modules, is_adapter

SHORTENER = ROOT / "shared" / "shortener"
DOMAINS = frozenset({"links", "jobs", "clicks", "loops", "access", "audit", "webhooks", "http", "services"})
# The shared vocabulary at the top of the package (its __init__.py docstring says so).
SHARED = frozenset(
    {
        "__init__",
        "exceptions",
        "clock",
        "observability",
        "settings",
        "request_model",
        "aws",
        "aws_serializer",
        "aws_usage",
    }
)
LONGEST_FUNCTION = 120


def stray_modules(package: Path) -> list[str]:
    """Modules of ``package`` that are neither in a domain package nor shared vocabulary."""
    stray = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if len(parts) == 1 and parts[0] in SHARED:
            continue
        if len(parts) > 1 and parts[0] in DOMAINS:
            continue
        stray.append(str(path.relative_to(package)))
    return stray


def store_getters(services: Path, root: Path) -> set[str]:
    """``services.<module>.<function>`` for every function of ``services`` whose return annotation
    names a class imported from an adapter module (a store, a bucket, a queue ...)."""
    found = set()
    for path in sorted(services.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        from_adapter = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and is_adapter(node.module)
            for alias in node.names
        }
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.returns is not None:
                named = {n.id for n in ast.walk(node.returns) if isinstance(n, ast.Name)}
                if named & from_adapter:
                    found.add(f"services.{path.stem}.{node.name}")
    return found


def handler_store_calls(functions: Path, root: Path, getters: set[str]) -> list[str]:
    """``path: services.x.getter`` for every handler module that imports a store getter, or reaches
    one through its services module (``from shortener.services import api as services``)."""
    found = []
    for path in sorted(functions.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {name.removeprefix("shortener.") for name in imported_modules(path, root)}
        aliases = {
            alias.asname or alias.name: f"services.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "shortener.services"
            for alias in node.names
        }
        names |= {
            f"{aliases[node.value.id]}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        }
        found += [f"{path.relative_to(root)}: {name}" for name in sorted(names & getters)]
    return found


def test_every_module_of_the_shortener_is_in_a_domain_package_or_shared() -> None:
    assert stray_modules(SHORTENER) == []


def test_the_domain_check_finds_a_stray_module(tmp_path: Path) -> None:
    (tmp_path / "links").mkdir()
    for name in ("__init__.py", "clock.py", "links/__init__.py", "links/model.py", "helpers.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "logic").mkdir()
    (tmp_path / "logic" / "urls.py").write_text("")
    assert stray_modules(tmp_path) == ["helpers.py", "logic/urls.py"]


@pytest.mark.parametrize("folder", ["shared", "functions", "shortener_cli"])
def test_no_function_is_longer_than_120_lines(folder: str) -> None:
    assert list(functions_longer_than(ROOT / folder, LONGEST_FUNCTION)) == []


def test_the_length_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x{line} = {line}\n" for line in range(LONGEST_FUNCTION))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n\ndef short():\n    return 1\n")
    found = list(functions_longer_than(tmp_path, LONGEST_FUNCTION, tmp_path))
    assert found == [f"long.py:1 long ({LONGEST_FUNCTION + 1} lines)"]


def test_the_store_getters_are_found() -> None:
    # Given the services, then the check sees the getters that hand out a store (which only the
    # services themselves call)
    getters = store_getters(SHORTENER / "services", ROOT)
    assert {"services.restarter.tokens", "services.authorizer.keys"} <= getters


def test_no_handler_calls_a_store_getter_of_services() -> None:
    getters = store_getters(SHORTENER / "services", ROOT)
    assert handler_store_calls(ROOT / "functions", ROOT, getters) == []


def test_the_getter_check_finds_a_handler_taking_a_store(tmp_path: Path) -> None:
    services = tmp_path / "shortener" / "services"
    services.mkdir(parents=True)
    (services / "api.py").write_text(
        "from shortener.jobs.store import JobsStore\nfrom shortener.jobs.status import JobStatus\n"
        "def jobs() -> JobsStore: ...\ndef job_queries() -> JobStatus: ...\n"
    )
    handlers = tmp_path / "functions" / "api"
    handlers.mkdir(parents=True)
    (handlers / "good.py").write_text("from shortener.services.api import job_queries\n")
    (handlers / "bad.py").write_text("from shortener.services.api import jobs, job_queries\n")
    getters = store_getters(services, tmp_path)
    assert getters == {"services.api.jobs"}
    assert handler_store_calls(tmp_path / "functions", tmp_path, getters) == [
        "functions/api/bad.py: services.api.jobs"
    ]
