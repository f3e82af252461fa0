"""How the layer's clients retry: adaptively (pacing a container to what a throttling table takes)
for background work, and as boto3's AWS_RETRY_MODE / AWS_MAX_ATTEMPTS say where the template sets
them: the functions someone waits on retry briefly and answer 503, within API Gateway's 29 s."""

import json
import os
import subprocess
import sys

import pytest

from local_stack.cloudformation.template import load_template

_RETRIES_OF_ONE_CLIENT = """
import json
from shortener import aws
print(json.dumps(aws.dynamodb().meta.config.retries))
"""

# Attempts of the functions someone waits on (the authorizer cannot answer 503: one more).
WAITED_ON = {"ApiFunction": "3", "AuthorizerFunction": "4"}


def retries(**env: str) -> dict[str, object]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    environment |= {"AWS_DEFAULT_REGION": "us-east-1", **env}
    done = subprocess.run(
        [sys.executable, "-c", _RETRIES_OF_ONE_CLIENT],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dict(json.loads(done.stdout))


def test_background_work_retries_adaptively_eight_times() -> None:
    assert retries() == {"mode": "adaptive", "total_max_attempts": 9}


def test_a_function_may_ask_for_standard_retries_as_boto3_names_them() -> None:
    assert retries(AWS_RETRY_MODE="standard", AWS_MAX_ATTEMPTS="3") == {
        "mode": "standard",
        "total_max_attempts": 3,
    }


@pytest.mark.parametrize(
    "logical_id",
    [
        logical_id
        for logical_id, resource in load_template()["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    ],
)
def test_only_the_functions_someone_waits_on_retry_briefly(logical_id: str) -> None:
    variables = (
        load_template()["Resources"][logical_id]["Properties"].get("Environment", {}).get("Variables", {})
    )
    if logical_id in WAITED_ON:
        attempts = WAITED_ON[logical_id]
        assert (variables.get("AWS_RETRY_MODE"), variables.get("AWS_MAX_ATTEMPTS")) == ("standard", attempts)
    else:
        assert "AWS_RETRY_MODE" not in variables and "AWS_MAX_ATTEMPTS" not in variables
