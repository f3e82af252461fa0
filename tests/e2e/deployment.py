"""The deployment under test: the tests that need only HTTP run through the ``deployment`` fixture,
against the local stack by default, or against a deployed stack (``make acceptance STACK=<name>``,
which sets ACCEPTANCE_STACK). Either way the API URL comes from the stack's outputs, read with
``describe_stacks``: for the local stack, its READY line's URL and resources are published as the
outputs of a CloudFormation stack in its embedded AWS, so the same code path runs in ``make test``.

Tests that need the local stack's insides (its ``stack``/``start_stack`` fixtures: restarts, faults,
killed workers, reading tables) are skipped against a deployed stack, with the reason."""

import json
import os
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from local_stack.cloudformation.template import load_template
from stack_tools.stacks import outputs_of
from tests.e2e.conftest import Answer, RunningStack, http_request

# Set by `make acceptance STACK=...`; with it, nothing local is started.
ACCEPTANCE_STACK = os.environ.get("ACCEPTANCE_STACK", "")
# An X-Api-Key for deployments whose API asks for one; the base of short URLs behind a custom domain.
API_KEY = os.environ.get("ACCEPTANCE_API_KEY", "")
PUBLIC_BASE_URL = os.environ.get("ACCEPTANCE_PUBLIC_BASE_URL", "")
LOCAL_ONLY_FIXTURES = frozenset({"stack", "start_stack", "scaling_stack"})


@dataclass
class Deployment:
    """A running shortener, known by its stack's outputs, driven over HTTP(S)."""

    stack_name: str
    outputs: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)
    short_url_base: str = ""

    @property
    def api_url(self) -> str:
        """Base URL of the API, ending with "/" (a deployed one includes the stage)."""
        return self.outputs["ApiUrl"]

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Answer:
        """One HTTP request to the API (``path`` relative to api_url); redirects are not followed."""
        return http_request(self.api_url, method, path, body, {**self.headers, **(headers or {})}, timeout)

    def post_json(self, path: str, payload: Any) -> Answer:
        return self.request("POST", path, json.dumps(payload), {"Content-Type": "application/json"})


def deployment_of(stack_name: str, cloudformation: Any) -> Deployment:
    """The deployment a stack's outputs describe."""
    outputs = outputs_of(stack_name, cloudformation)
    return Deployment(
        stack_name=stack_name,
        outputs=outputs,
        headers={"X-Api-Key": API_KEY} if API_KEY else {},
        # Short URLs name the edge when it is on (EdgeUrl), else the API.
        short_url_base=PUBLIC_BASE_URL.rstrip("/") + "/"
        if PUBLIC_BASE_URL
        else outputs.get("EdgeUrl", outputs["ApiUrl"]),
    )


def publish_local_outputs(running: RunningStack, stack_name: str = "shortener-local-acceptance") -> str:
    """Publish the local stack's outputs as a CloudFormation stack in its embedded AWS: ApiUrl is
    the local API, and every template output that is a Ref to a resource is that resource's local
    name; EdgeUrl is the local edge. The stack holds no resource of its own (a wait-condition
    handle, which creates nothing)."""
    values = {"ApiUrl": running.api_url}
    if running.info.get("edge_url"):
        values["EdgeUrl"] = running.edge_url
    for key, output in load_template().get("Outputs", {}).items():
        reference = output.get("Value", {})
        if isinstance(reference, dict) and reference.get("Ref") in running.resources:
            values[key] = running.resources[reference["Ref"]]
    template = {
        "Resources": {"Nothing": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {key: {"Value": value} for key, value in values.items()},
    }
    running.boto3_client("cloudformation").create_stack(
        StackName=stack_name, TemplateBody=json.dumps(template)
    )
    return stack_name


@pytest.fixture(scope="module")
def deployment(request: pytest.FixtureRequest) -> Deployment:
    """The deployment under test: ACCEPTANCE_STACK's, found in the AWS account of the caller's
    credentials and region; else the module's local stack, through the same outputs."""
    if ACCEPTANCE_STACK:
        return deployment_of(ACCEPTANCE_STACK, boto3.client("cloudformation"))
    running: RunningStack = request.getfixturevalue("stack")
    cloudformation = running.boto3_client("cloudformation")
    local = deployment_of(publish_local_outputs(running), cloudformation)
    if running.api_key and not API_KEY:
        local.headers["X-Api-Key"] = running.api_key
    return local


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Against a deployed stack, skip the tests that need the local stack's insides."""
    needs = LOCAL_ONLY_FIXTURES & set(getattr(item, "fixturenames", ()))
    if ACCEPTANCE_STACK and needs:
        pytest.skip(
            f"needs the local stack ({', '.join(sorted(needs))}); {ACCEPTANCE_STACK} is a deployed stack"
        )
