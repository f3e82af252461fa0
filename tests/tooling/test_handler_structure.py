"""The handlers stay thin: no module under functions/ reaches AWS itself. Data access (the only
boto3 code) lives in each domain package's adapter modules (shortener/__init__.py names them), and
the objects over it are built in shortener.services."""

import ast
from pathlib import Path

import pytest

from tests.support.structure import is_adapter

ROOT = Path(__file__).resolve().parents[2]
HANDLER_MODULES = sorted((ROOT / "functions").glob("*/*.py"))
# The AWS SDK (and the adapters over it): a handler gets what uses them from shortener.services.
FORBIDDEN = ("boto3", "botocore")


def forbidden_imports(source: str) -> list[str]:
    """The modules ``source`` imports from FORBIDDEN or adapter modules (at any depth of the module, in
    any form)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from shortener import dal" names the package as an imported name.
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [
            name
            for name in names
            if is_adapter(name) or any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN)
        ]
    return found


def test_every_function_has_handler_modules() -> None:
    # Given the functions folder, then the check below has something to check: every function's app
    assert {path.parent.name for path in HANDLER_MODULES} >= {
        "api",
        "authorizer",
        "worker",
        "poller",
        "restarter",
        "scaler",
    }


@pytest.mark.parametrize("path", HANDLER_MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_handler_module_imports_data_access_or_the_aws_sdk(path: Path) -> None:
    # Given a handler module, then it imports neither an adapter module nor boto3/botocore
    assert forbidden_imports(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "source",
    [
        "from shortener.jobs.store import JobsStore",
        "import shortener.links.store",
        "from shortener.jobs import store",
        "from shortener.links.store_items import LinkItems",
        "from shortener.jobs import bucket",
        "from shortener import aws",
        "import boto3",
        "from botocore.exceptions import ClientError",
        "def build():\n    import boto3\n    return boto3.client('s3')",
    ],
)
def test_the_check_finds_each_form_of_import(source: str) -> None:
    # Given a module that reaches AWS in one of the ways Python allows, then the check names it
    assert forbidden_imports(source) != []


def test_the_check_lets_services_and_logic_through() -> None:
    source = "from shortener.services.api import jobs\nfrom shortener.jobs import bulk\nimport json"
    assert forbidden_imports(source) == []
