"""The zygote (local_stack/awslambda/zygote.py) after its stack is gone: the exits of its workers,
which it can no longer report, end it quietly (no ConnectionResetError traceback in the terminal
the next run shares)."""

import json
import os
import socket
import subprocess
import sys

from local_stack.awslambda import zygote


def test_an_exit_it_cannot_report_ends_the_zygote_without_an_error() -> None:
    # Given a worker that has ended, and the stack's end of the zygote's socket closed (kill -9)
    channel, stack_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", ""], dict(os.environ))
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    stack_end.close()
    # When the zygote reaps it and tries to report its exit
    try:
        reported = zygote._report_exits(channel, {pid})
    finally:
        channel.close()
    # Then it learns that the stack is gone, without raising
    assert reported is False


def test_a_message_to_a_stack_that_is_gone_is_not_sent_and_raises_nothing() -> None:
    # Given the stack's end of the socket closed
    channel, stack_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stack_end.close()
    # Then sending says so
    try:
        assert zygote._send(channel, {"spawned": 1, "pid": 2}) is False
    finally:
        channel.close()


_WORKER = """
import json, os
import boto3
from local_stack.awslambda import zygote

zygote.warm_sdk_models()
os.environ.update(
    AWS_ACCESS_KEY_ID="worker-key", AWS_SECRET_ACCESS_KEY="worker-secret",
    AWS_DEFAULT_REGION="eu-west-1", AWS_ENDPOINT_URL="http://127.0.0.1:4566",
)
loader = boto3.DEFAULT_SESSION._session.get_component("data_loader")
parsed = any(key[:2] == ("load_service_model", "dynamodb") for key in loader._cache)
client = boto3.client("dynamodb")
print(json.dumps({
    "parsed": parsed,
    "key": client._request_signer._credentials.access_key,
    "region": client.meta.region_name,
    "endpoint": client.meta.endpoint_url,
}))
"""


def test_the_sdk_models_are_parsed_once_and_a_workers_clients_read_its_own_variables() -> None:
    # Given the zygote's warm-up in a fresh interpreter (boto3's default session is per process)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    answer = subprocess.run(
        [sys.executable, "-c", _WORKER], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(answer.stdout)
    # Then the service models were left parsed, and a worker's client, made after it sets its own
    # variables, uses its credentials, region and endpoint, never the warm-up's
    assert seen == {
        "parsed": True,
        "key": "worker-key",
        "region": "eu-west-1",
        "endpoint": "http://127.0.0.1:4566",
    }
