"""What AWS would refuse, the local stack refuses: each function's calls are authorised against its
own role in the template, and alarm actions fail where CloudWatch's would. Some tests run a copy of
the template with one change, to show that the stack notices it."""

import copy
import json
import os
import re
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from local_stack.cloudformation.template import PROJECT_ROOT, load_template
from local_stack.iam.principals import function_access_key
from local_stack.iam.signing_secret import SECRET_FILE
from tests.e2e.conftest import RunningStack, StartStack

# Alarm periods of 60 s last one second; a threshold below zero breaches on the first sample of an
# empty queue, so the low alarm goes to ALARM at once and its action runs.
ALARM_TIME_SCALE = 60.0
ALARM_PARAMS = {"ScaleThresholdLow": "-1"}
# The terminal's line of a scaler run ("<time> INFO  ScalerFunction     Scaling outcome  ...").
SCALER_LOG = re.compile(r"ScalerFunction\s+Scaling outcome")


def start_copy(
    start_stack: StartStack, directory: Path, edit: Callable[[dict[str, Any]], None], **options: Any
) -> RunningStack:
    """A stack of template.yaml with ``edit`` applied. The copy, written to ``directory``, points
    at the project's code folders (relative to the copy, as SAM reads them)."""
    template = copy.deepcopy(load_template())
    edit(template)
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = os.path.relpath(PROJECT_ROOT / properties[key], directory) + "/"
    path = directory / "template.json"
    path.write_text(json.dumps(template), encoding="utf-8")
    running = start_stack("--template", str(path), **options)
    assert "is not running" not in running.log(), running.log()
    return running


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"no {what} within {timeout:.0f} s")


def alarm_actions(running: RunningStack, alarm: str) -> list[str]:
    history = running.boto3_client("cloudwatch").describe_alarm_history(
        AlarmName=alarm, HistoryItemType="Action"
    )
    return [item["HistorySummary"] for item in history["AlarmHistoryItems"]]


def job_records(running: RunningStack) -> int:
    dynamodb = running.boto3_client("dynamodb")
    return len(
        [
            item
            for page in dynamodb.get_paginator("scan").paginate(
                TableName=running.resources["JobsTable"], ConsistentRead=True
            )
            for item in page["Items"]
            if item["sk"]["S"] == "job"
        ]
    )


@pytest.mark.e2e_timeout(60)
def test_the_stack_enforces_iam_by_default(stack: RunningStack) -> None:
    assert stack.info["iam"] is True
    assert "IAM          enforced" in stack.log()


@pytest.mark.e2e_timeout(60)
def test_the_templates_roles_let_the_api_create_a_link(stack: RunningStack) -> None:
    answer = stack.post_json("/", {"url": "https://example.com/iam/allowed"})
    assert answer.status == 201, answer.text


@pytest.mark.e2e_timeout(120)
def test_a_role_without_put_item_on_the_links_table_fails_as_on_aws(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a copy of the template whose API role lacks dynamodb:PutItem on the links table
    def drop_put_item(template: dict[str, Any]) -> None:
        [links] = [
            statement
            for statement in template["Resources"]["ApiFunction"]["Properties"]["Policies"][0]["Statement"]
            if statement["Resource"] == {"Fn::GetAtt": ["LinksTable", "Arn"]}
            and "dynamodb:PutItem" in statement["Action"]
        ]
        links["Action"].remove("dynamodb:PutItem")

    running = start_copy(start_stack, tmp_path, drop_put_item)
    # When a link is created
    answer = running.post_json("/", {"url": "https://example.com/iam/refused"})
    # Then the write is refused with AWS's AccessDeniedException and API Gateway answers 502
    assert answer.status == 502, answer.text
    links = f"arn:aws:dynamodb:{running.region}:123456789012:table/{running.resources['LinksTable']}"
    wait_for(
        lambda: f"is not authorized to perform: dynamodb:PutItem on resource: {links}" in running.log(),
        10,
        "AccessDeniedException in the function's log",
    )
    assert "AccessDeniedException" in running.log()


@pytest.mark.e2e_timeout(90)
def test_a_bulk_upload_the_queue_refuses_is_withdrawn_and_answered_503(stack: RunningStack) -> None:
    # Given a queue that refuses messages above 1 KiB (its smallest limit), and a CSV whose rows
    # make a bigger message
    sqs = stack.boto3_client("sqs")
    queue = stack.resources["BulkQueue"]
    before = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["MaximumMessageSize"])["Attributes"]
    jobs_before = job_records(stack)
    rows = "".join(f"https://example.com/iam/withdrawn/{'x' * 80}/{number}\n" for number in range(40))
    sqs.set_queue_attributes(QueueUrl=queue, Attributes={"MaximumMessageSize": "1024"})
    try:
        # When it is uploaded
        answer = stack.request("POST", "/bulk", "url\n" + rows, {"Content-Type": "text/csv"})
    finally:
        sqs.set_queue_attributes(QueueUrl=queue, Attributes=before)
    # Then the API withdraws the job it had recorded (dynamodb:DeleteItem on the jobs table) and
    # says the queue is unavailable, rather than a 502
    assert answer.status == 503, answer.text
    assert answer.json()["error"] == "queue_unavailable"
    assert job_records(stack) == jobs_before


@pytest.mark.e2e_timeout(120)
def test_alarms_on_a_topic_under_the_aws_managed_key_never_reach_the_scaler(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a copy of the template whose scaling topic is encrypted with alias/aws/sns
    def encrypt_scaling_topic(template: dict[str, Any]) -> None:
        template["Resources"]["ScalingTopic"]["Properties"] = {"KmsMasterKeyId": "alias/aws/sns"}

    running = start_copy(
        start_stack, tmp_path, encrypt_scaling_topic, time_scale=ALARM_TIME_SCALE, params=ALARM_PARAMS
    )
    alarm = running.resources["QueueDepthLowAlarm"]
    # When the low alarm goes to ALARM, its action fails as CloudWatch's does, in its history
    failures = wait_for(lambda: alarm_actions(running, alarm), 30, "action in the alarm's history")
    assert failures == [
        f"Failed to execute action {running.resources['ScalingTopic']}. Received error: "
        '"CloudWatch Alarms does not have authorization to access the SNS topic encryption key."'
    ]
    state = running.boto3_client("cloudwatch").describe_alarms(AlarmNames=[alarm])["MetricAlarms"][0]
    assert state["StateValue"] == "ALARM"
    # Then the scaler was never invoked (the action ran, and published nothing)
    assert not SCALER_LOG.search(running.log())


@pytest.mark.e2e_timeout(120)
def test_alarms_on_the_templates_topics_reach_the_scaler(start_stack: StartStack) -> None:
    running = start_stack(time_scale=ALARM_TIME_SCALE, params=ALARM_PARAMS)
    alarm = running.resources["QueueDepthLowAlarm"]
    actions = wait_for(lambda: alarm_actions(running, alarm), 30, "action in the alarm's history")
    assert actions == [f"Successfully executed action {running.resources['ScalingTopic']}"]
    wait_for(lambda: SCALER_LOG.search(running.log()), 30, "invocation of the scaler")


def presigned_get(stack: RunningStack, bucket: str, key: str, secret: str) -> str:
    """A presigned GET signed as the API function (its access key id) with ``secret``."""
    s3 = boto3.client(
        "s3",
        endpoint_url=stack.aws_endpoint,
        region_name=stack.region,
        aws_access_key_id=function_access_key(stack.resources["ApiFunction"]),
        aws_secret_access_key=secret,
        config=Config(signature_version="s3v4"),
    )
    return str(s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300))


def fetched(url: str, *, from_a_page: bool = True) -> tuple[int, bytes]:
    """The answer to ``url`` fetched as a web page on another origin would fetch it (or as a tool
    on this machine does, with no ``Origin``)."""
    request = urllib.request.Request(
        url, headers={"Origin": "https://some-site.example"} if from_a_page else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.e2e_timeout(120)
def test_a_presigned_url_signed_with_the_old_constant_secret_is_refused(stack: RunningStack) -> None:
    # Given a job file in the stack's bucket, and the stack's own secret kept in its data folder
    bucket, key = stack.resources["BulkBucket"], "uploads/e2e-signing-secret.csv"
    stack.boto3_client("s3").put_object(Bucket=bucket, Key=key, Body=b"url\n")
    kept = stack.data_dir / SECRET_FILE
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    secret = kept.read_text().strip()
    assert len(secret) >= 32 and secret != "local"
    # When a request is signed with the constant secret "local" and the function's key id
    forged = presigned_get(stack, bucket, key, "local")
    # Then S3's answer refuses it, and a page may not send it either
    status, body = fetched(forged, from_a_page=False)
    assert (status, b"<Code>SignatureDoesNotMatch</Code>" in body) == (403, True), body
    assert fetched(forged)[0] == 403
    # And the same request signed with the function's real credentials works, from a page too
    assert fetched(presigned_get(stack, bucket, key, secret)) == (200, b"url\n")
