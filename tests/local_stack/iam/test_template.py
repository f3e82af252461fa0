"""The functions' roles as the SAM transform builds them from template.yaml, judged by the local
stack's IAM: each function may do what its code paths need, and no more."""

from functools import cache

import pytest

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import Resources, template_resources
from local_stack.iam import Principal, function_principals
from local_stack.iam.policy import Decision, Request, evaluate

STACK, REGION = "local", "us-east-1"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{STACK}"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{STACK}-BulkQueue"
FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{STACK}"


def bucket() -> str:
    return "arn:aws:s3:::" + resources().physical_id("BulkBucket")


@cache
def resources() -> Resources:
    return template_resources(STACK, REGION, "http://127.0.0.1:1")


def principal(function: str) -> Principal:
    name = resources().physical_id(function)
    [found] = [p for p in function_principals(resources()).by_access_key.values() if p.function_name == name]
    return found


def decide(function: str, action: str, resource: str) -> Decision:
    return evaluate(principal(function).policies, Request(action, resource))


def test_every_function_has_its_role_and_nothing_is_left_unread() -> None:
    principals = function_principals(resources())
    assert principals.warnings == []
    assert {p.function_name for p in principals.by_access_key.values()} == {
        spec.name for spec in resources().functions.values()
    }


def test_a_principal_is_named_as_aws_names_an_assumed_role() -> None:
    assert principal("ApiFunction").arn == (
        f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/{STACK}-ApiFunctionRole/{STACK}-ApiFunction"
    )


def test_the_api_may_withdraw_a_job_whose_rows_could_not_be_queued() -> None:
    # submit_job deletes the job record when the queue refuses its rows
    assert decide("ApiFunction", "dynamodb:DeleteItem", f"{TABLE}-JobsTable") is Decision.ALLOW


def test_the_api_may_release_a_find_if_exists_claim_of_a_changed_link() -> None:
    # link_changes: a link's new target, disabling or deleting removes its URL's claim in a transaction
    assert decide("ApiFunction", "dynamodb:DeleteItem", f"{TABLE}-LinksTable") is Decision.ALLOW


def test_the_api_may_write_the_links_of_a_json_bulk_call_in_batches() -> None:
    # POST /links/bulk: generated links 25 a BatchWriteItem, as the bulk path writes them
    assert decide("ApiFunction", "dynamodb:BatchWriteItem", f"{TABLE}-LinksTable") is Decision.ALLOW


def test_the_poller_may_renew_the_visibility_of_a_batch_it_works_on() -> None:
    # ChangeMessageVisibilityBatch, every third of the visibility timeout while a batch is processed
    assert decide("PollerFunction", "sqs:ChangeMessageVisibility", QUEUE) is Decision.ALLOW


def test_owners_list_their_links_and_jobs_through_the_by_owner_indexes_only() -> None:
    # Given the ByOwner GSIs of the links and jobs tables, When the API queries, Then only those
    for table in ("LinksTable", "JobsTable"):
        assert decide("ApiFunction", "dynamodb:Query", f"{TABLE}-{table}/index/ByOwner") is Decision.ALLOW
    assert decide("ApiFunction", "dynamodb:Query", f"{TABLE}-LinksTable") is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    ("function", "action", "resource"),
    [
        ("ApiFunction", "dynamodb:BatchWriteItem", f"{TABLE}-JobsTable"),
        ("ApiFunction", "dynamodb:DeleteItem", f"{TABLE}-TokensTable"),
        ("ApiFunction", "sqs:ReceiveMessage", QUEUE),
        ("PollerFunction", "sqs:SendMessage", QUEUE),
        ("PollerFunction", "sqs:GetQueueAttributes", QUEUE),
        ("PollerFunction", "dynamodb:DeleteItem", f"{TABLE}-TokensTable"),
        ("PollerFunction", "lambda:InvokeFunction", f"{FUNCTION}-ApiFunction"),
        ("ScalerFunction", "dynamodb:Scan", f"{TABLE}-TokensTable"),
        # Results are written only by the files function
        ("ApiFunction", "s3:PutObject", "results/job.csv"),
        ("FilesFunction", "s3:PutObject", "uploads/job.csv"),
        ("FilesFunction", "s3:DeleteObject", "uploads/job.csv"),
        ("PollerFunction", "s3:GetObject", "results/job.csv"),
    ],
)
def test_what_no_code_path_needs_is_refused(function: str, action: str, resource: str) -> None:
    if action.startswith("s3:"):
        resource = f"{bucket()}/{resource}"
    assert decide(function, action, resource) is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    ("action", "key", "decision"),
    [
        # The tag index backfill: its progress item, and entries; never a link's own item
        ("dynamodb:GetItem", "#migrations", Decision.ALLOW),
        ("dynamodb:UpdateItem", "#migrations", Decision.ALLOW),
        ("dynamodb:PutItem", "#tag#0123#abc", Decision.ALLOW),
        ("dynamodb:BatchGetItem", "#tag#0123#abc", Decision.ALLOW),
        ("dynamodb:GetItem", "abc", Decision.IMPLICIT_DENY),
        ("dynamodb:UpdateItem", "abc", Decision.IMPLICIT_DENY),
        ("dynamodb:PutItem", "abc", Decision.IMPLICIT_DENY),
        ("dynamodb:PutItem", "#migrations", Decision.IMPLICIT_DENY),
        ("dynamodb:DeleteItem", "#tag#0123#abc", Decision.IMPLICIT_DENY),
    ],
)
def test_the_restarter_touches_only_the_backfills_items_of_the_links_table(
    action: str, key: str, decision: Decision
) -> None:
    # dynamodb:LeadingKeys is the item's partition key on AWS (the local stack does not set it)
    request = Request(action, f"{TABLE}-LinksTable", context={"dynamodb:LeadingKeys": [key]})
    assert evaluate(principal("RestarterFunction").policies, request) is decision


@pytest.mark.parametrize(
    ("function", "action", "resource"),
    [
        # New work starts its loops: a slot claimed in the tokens table, then the loop invoked
        ("ApiFunction", "dynamodb:PutItem", f"{TABLE}-TokensTable"),
        ("FilesFunction", "lambda:InvokeFunction", f"{FUNCTION}-poller"),
        # Presigned links carry the signer's permissions: the upload in, the results out
        ("ApiFunction", "s3:PutObject", "{bucket}/uploads/job.csv"),
        ("ApiFunction", "s3:GetObject", "{bucket}/results/job.csv"),
        # A status read looks for an upload whose S3 event was lost (HeadObject is s3:GetObject)
        ("ApiFunction", "s3:GetObject", "{bucket}/uploads/job.csv"),
        # The split reads the upload; the results file is written once, in parts when large
        ("FilesFunction", "s3:GetObject", "{bucket}/uploads/job.csv"),
        ("FilesFunction", "s3:PutObject", "{bucket}/results/job.csv"),
        ("FilesFunction", "s3:AbortMultipartUpload", "{bucket}/results/job.csv"),
        ("FilesFunction", "dynamodb:UpdateItem", f"{TABLE}-JobsTable"),
    ],
)
def test_the_direct_upload_paths_are_allowed(function: str, action: str, resource: str) -> None:
    assert decide(function, action, resource.format(bucket=bucket())) is Decision.ALLOW


def test_a_loop_may_re_invoke_itself() -> None:
    assert decide("PollerFunction", "lambda:InvokeFunction", f"{FUNCTION}-poller") is Decision.ALLOW


def test_sams_managed_policies_are_attached() -> None:
    # AWSLambdaBasicExecutionRole, and AWSXrayWriteOnlyAccess for Tracing: Active
    assert decide("ScalerFunction", "logs:PutLogEvents", "*") is Decision.ALLOW
    assert decide("ScalerFunction", "xray:PutTraceSegments", "*") is Decision.ALLOW
