"""Every lease the jobs store writes is given up on a restart of the local stack: its name follows
the jobs table's ``ExpireOnRestart`` naming rule (a lease's end, set to 0) or is in its
``ForgetOnRestart`` (a lease's holder, dropped), so a lease added later needs no one to list it."""

import ast
import fnmatch
import re
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from local_stack.cloudformation.template import load_template
from local_stack.dynamodb.state import DynamoDbState
from tests.support.structure import ROOT

JOBS_STORE = ROOT / "shared" / "shortener" / "jobs" / "store"
# An attribute name: a word with "lease" in it and at least one underscore (prose says "lease").
_LEASE_NAME = re.compile(r"\b[a-z0-9_]*(?:_lease|lease_)[a-z0-9_]*\b")


def written_lease_names(folder: Path) -> set[str]:
    """The lease-like attribute names in the string literals of ``folder``'s modules (an f-string's
    placeholders read as ``x``: ``labels_{image_format}_lease`` is ``labels_x_lease``)."""
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr):
                text = "".join(part.value if isinstance(part, ast.Constant) else "x" for part in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            names.update(_LEASE_NAME.findall(text))
    return names


def jobs_table_rules() -> tuple[list[str], list[str]]:
    template = load_template(ROOT / "template.yaml")
    rules = template["Resources"]["JobsTable"]["Metadata"]["LocalStack"]
    return list(rules.get("ExpireOnRestart", [])), list(rules.get("ForgetOnRestart", []))


def test_every_lease_the_jobs_store_writes_is_given_up_on_restart() -> None:
    # Given the lease attributes the jobs store's code names
    names = written_lease_names(JOBS_STORE)
    assert {"split_lease", "results_lease", "labels_x_lease", "lease_until", "lease_holder"} <= names
    # Then each is expired or forgotten by the jobs table's rules
    expire, forget = jobs_table_rules()
    uncovered = {
        name for name in names if not any(fnmatch.fnmatchcase(name, rule) for rule in [*expire, *forget])
    }
    assert not uncovered, f"add these to the JobsTable's ExpireOnRestart or ForgetOnRestart: {uncovered}"


@pytest.mark.integration
def test_a_rule_with_a_pattern_expires_every_matching_number() -> None:
    # Given restored items with leases named by a pattern, and a lease holder to forget
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="jobs",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        state = DynamoDbState(
            "123456789012", "us-east-1", {"jobs": ["lease_holder"]}, {"jobs": ["*_lease", "*lease_until"]}
        )
        item = {
            "id": {"S": "a"},
            "labels_png_lease": {"N": "99"},
            "lease_until": {"N": "99"},
            "lease_holder": {"S": "request-1"},
            "labels_png_owner": {"S": "request-1"},
            "not_a_lease": {"S": "kept"},
        }
        state.apply(["dynamodb", "put", "jobs", item], {})
        # When the restore finishes
        state.finish_restore()
        # Then the leases have run out, the holder is forgotten, the rest kept
        restored = client.get_item(TableName="jobs", Key={"id": {"S": "a"}})["Item"]
        assert restored == {
            "id": {"S": "a"},
            "labels_png_lease": {"N": "0"},
            "lease_until": {"N": "0"},
            "labels_png_owner": {"S": "request-1"},
            "not_a_lease": {"S": "kept"},
        }
