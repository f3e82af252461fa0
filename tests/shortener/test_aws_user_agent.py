"""The clients' User-Agent is made once (botocore would rebuild it twice per request), and it still
says what a request came from: the SDK, and in Lambda the execution environment, which the local
stack's request log reads to tell a function's requests from its own."""

import json
import os
import subprocess
import sys

import pytest

from local_stack.embedded.request_log import parse

# A real DynamoDB request as the Lambda layer's client sends it, stopped just before the network:
# its headers are printed as JSON.
_SEND_ONE = """
import json
from botocore.awsrequest import AWSResponse
from botocore.awsrequest import HTTPHeaders
from shortener import aws

client = aws.dynamodb()
sent = []

def answer(request, **_):
    sent.append(dict(request.headers))
    return AWSResponse(request.url, 200, HTTPHeaders(), type("Raw", (), {"stream": lambda *_: [b"{}"]})())

client.meta.events.register("before-send.dynamodb.*", answer)
client.list_tables()
client.list_tables()
print(json.dumps({k: v.decode() if isinstance(v, bytes) else v for k, v in sent[-1].items()}))
"""


def sent_headers(execution_env: str | None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key != "AWS_EXECUTION_ENV" and not key.startswith("AWS_ENDPOINT_URL")
    }
    env |= {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    if execution_env:
        env["AWS_EXECUTION_ENV"] = execution_env
    done = subprocess.run(
        [sys.executable, "-c", _SEND_ONE], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("execution_env", ["AWS_Lambda_python3.13", None])
def test_requests_name_the_sdk_the_application_and_the_lambda_environment(execution_env: str | None) -> None:
    # Given the layer's DynamoDB client in a process with (or without) Lambda's AWS_EXECUTION_ENV
    # When it sends a request
    headers = sent_headers(execution_env)
    user_agent = headers["User-Agent"]
    # Then the header names boto3, botocore and the application
    assert user_agent.startswith("Boto3/"), user_agent
    assert "Botocore/" in user_agent and "app/shortener" in user_agent, user_agent
    # And the local stack's request log counts it as a function's request only from within Lambda
    recorded = parse({"headers": headers, "url": "http://127.0.0.1/", "method": "POST", "body": "{}"})
    assert recorded.by_function is (execution_env is not None)
