"""Every change the local stack makes to moto's own code, in one list, with why each exists.

moto is pinned in pyproject.toml; these depend on its internals, and the tests named in each entry
fail when one stops holding. Each patch lives in its service's package; this list, above every
package, collects them (so the embedded AWS's package imports no service). All are idempotent:
:func:`install_moto_fixes` installs those every embedded AWS runs with (the stack and
tests/conftest.py call it before starting one), :func:`install_all` every one
(tests/local_stack/test_structure.py checks that every ``install*`` function of a module that imports moto
is listed here).

What the local stack puts in front of moto without changing it (the serialising middleware, the
control routes, the presigned URL gate, local tools only, the IAM access control) is described in
``server`` and ``local_only``; the durable state reads and writes moto's backends in
local_stack/durability without changing their code."""

from collections.abc import Callable
from dataclasses import dataclass

from local_stack import registry
from local_stack.athena import queries as athena_queries
from local_stack.awslambda import quota as lambda_quota
from local_stack.cloudformation import deploy
from local_stack.cloudwatch import history, subscriptions
from local_stack.cognito import tokens as cognito_tokens
from local_stack.dynamodb import compact as dynamodb_compact
from local_stack.dynamodb import expressions as dynamodb_expressions
from local_stack.dynamodb import index as dynamodb_index
from local_stack.dynamodb import results as dynamodb_results
from local_stack.embedded import server
from local_stack.firehose import delivery as firehose_delivery
from local_stack.s3 import bucket_policies, delete_refusals
from local_stack.s3 import multipart as s3_multipart


@dataclass(frozen=True)
class Patch:
    install: Callable[[], None]
    changes: str  # what in moto
    why: str
    installed_by: str
    # The function in a moto-importing module that this entry installs, when ``install`` is a
    # wrapper that gives it what it needs (the registered CloudFormation providers).
    wraps: Callable[..., None] | None = None


PATCHES: tuple[Patch, ...] = (
    Patch(
        cognito_tokens.install,
        "CognitoIdpUserPool.create_jwt; CognitoIdpJsonWebKeyResponse.json_web_key",
        "moto signs every user pool's tokens with one private key published in its source, so anyone "
        "could forge a token its JWKS verifies, and makes every token valid for an hour. Tokens are "
        "re-signed with the data folder's own key (its public half is the JWKS answered), valid as "
        "long as the app client says (divided by --time-scale).",
        "CognitoService.attach (the stack); tests/local_stack/cognito/test_hosted_sign_in.py",
    ),
    Patch(
        s3_multipart.install,
        "FakeMultipart.complete",
        "moto held a completed multipart object three to four times in memory (a bytearray, its "
        "bytes copy, the checksum builder's copy and its copy): a 2,000,000-row job's results "
        "file, or a QR ZIP, swelled the stack at the job's end. One copy now, same answers.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/s3/test_multipart.py",
    ),
    Patch(
        server.install_item_level_transaction_rollback,
        "DynamoDBBackend.transact_write_items; moto.dynamodb.models.copy",
        "TransactWriteItems deep-copied every table it touched to roll back: each transaction cost "
        "time in proportion to the table's size. Only the touched items are remembered now.",
        "install_moto_fixes (the stack, tests/conftest.py)",
    ),
    Patch(
        server.install_whole_recorder_lines,
        "Recorder._record_request",
        "Concurrent requests interleaved their lines in moto's request recording (--moto-api), "
        "which then no longer parsed; one request records at a time.",
        "install_moto_fixes (the stack, tests/conftest.py)",
    ),
    Patch(
        server.install_backlog_independent_sqs,
        "SQSBackend.is_message_valid_based_on_retention_period, .get_queue_attributes; Queue.messages "
        "and its delayed / not-visible counts",
        "moto scanned every message of a queue (reading the clock per message) for each message it "
        "handed out or took in, so a bulk job's backlog made each request slower; and counts read "
        "the clock once each, so a message could be in neither count. The clock is read once.",
        "install_moto_fixes (the stack, tests/conftest.py)",
    ),
    Patch(
        server.install_backend_lookup_per_host,
        "DomainDispatcherApplication.get_backend_for_host",
        "moto's server found each request's service by listing its package folder (a listdir and "
        "an isdir per entry) and trying every service's URL patterns: about a third of the embedded "
        "AWS's CPU in a small bulk job. A host's service is looked up once now, the same answer.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/embedded/test_server.py",
    ),
    Patch(
        firehose_delivery.install,
        "FirehoseBackend.put_record_batch, .put_s3_records",
        "moto ignores a prefix's expressions (!{timestamp:...}), never converts records to Parquet, "
        "and takes any number of records: the click events would land where no query looks, as "
        "JSON, and a call AWS refuses would pass. Prefixes, conversion and limits are AWS's now.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/firehose/test_delivery.py",
    ),
    Patch(
        athena_queries.install,
        "AthenaBackend.start_query_execution; AthenaResponse.get_query_execution, .get_query_results",
        "moto records a query and answers it with no rows: the click reports would read nothing. "
        "Queries now run in DuckDB over the Glue tables' Parquet objects, with Athena's states, "
        "result paging, CSV output, bytes scanned and the workgroup's cutoff.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/athena/test_queries.py",
    ),
    Patch(
        registry.install_cloudformation,
        "CloudFormationBackend.create_stack, .create_change_set, .execute_change_set; "
        "Stack.stack_resources; parsing.clean_json, ResourceMap._delete_resource; "
        "RestAPI.create_from_cloudformation_json; Deployment and LayerVersion physical ids; "
        "CloudFormation models for the types moto lacks",
        "moto's CloudFormation runs no SAM transform and no Rules, lacks models for some types this "
        "template uses, gives a change set's stack no outputs and takes only a literal Fn::Select "
        "index: `sam deploy` against the embedded AWS would deploy a different stack.",
        "tests/e2e/test_deploy_e2e.py, tests/local_stack/cloudformation/test_deploy.py",
        wraps=deploy.install,
    ),
    Patch(
        delete_refusals.install,
        "FakeBucket.delete_from_cloudformation_json; Stack.delete; CloudFormationBackend.delete_stack",
        "moto's CloudFormation deleted a stack whose bucket held objects (leaving the bucket unseen); "
        "S3 refuses (BucketNotEmpty) and the stack ends DELETE_FAILED, listed, as on AWS.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/s3/test_delete_refusals.py",
    ),
    Patch(
        bucket_policies.install,
        "FakeBucket.get_permission",
        "moto evaluates bucket policies without their conditions: the bulk bucket's HttpsOnly Deny "
        "(aws:SecureTransport false) denied every object request. Requests here stand for AWS's "
        "HTTPS ones, so such a statement does not apply.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/s3/test_delete_refusals.py",
    ),
    Patch(
        lambda_quota.install,
        "moto.awslambda.urls.url_paths; LambdaResponse.get_account_settings; LambdaBackend.create_function",
        "moto has no GetAccountSettings (make deploy reads it) and lets a function created with a "
        "reservation leave fewer than 100 executions unreserved, which AWS refuses.",
        "install_moto_fixes (the stack, tests/conftest.py); "
        "tests/local_stack/s3/test_delete_refusals.py, tests/e2e/test_deploy_e2e.py",
    ),
    Patch(
        dynamodb_compact.install_slotted_values,
        "DynamoType and LimitedSizeDict (the classes, in every module that imported them)",
        "Every attribute value moto holds was an object with its own dict: 88 bytes each, three "
        "of them a bulk link's own; each item's attribute dict carried a dict and weak reference "
        "slot. The same classes with __slots__: 48 bytes a value, 16 less a dict "
        "(docs/capacity.md).",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/dynamodb/test_compact.py",
    ),
    Patch(
        dynamodb_compact.install_slotted_items,
        "Item (the class, in every module that imported it)",
        "Every item moto holds was an object with its own dict (96 bytes); the same class body "
        "with its three attributes in slots, on object rather than BaseModel, holds one in 56; "
        "items are still recorded among moto's Item instances.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/dynamodb/test_compact.py",
    ),
    Patch(
        dynamodb_index.install,
        "Table.query (on a secondary index), .put_item, .delete_item; DynamoDBBackend.update_item",
        "moto answered a Query on an index by sorting and walking every item of the table (13.8 s "
        "for one Query at 810,000 items); a sorted index per partition, kept on every write, "
        "answers it in proportion to what it reads, with moto's own results (on an index that "
        "projects every attribute, the filter runs before the copy, so only what it keeps is copied).",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/dynamodb/test_index.py",
    ),
    Patch(
        dynamodb_expressions.install,
        "ConditionExpressionParser.parse",
        "moto raised KeyError for a name or value an expression does not define and ValueError for "
        "text it cannot parse: a 500 that boto3 retries, where DynamoDB answers "
        "ValidationException. Those are ValidationException now.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/dynamodb/test_expressions.py",
    ),
    Patch(
        dynamodb_results.install,
        "ActionResult.execute_result (DynamoDB Query, Scan, GetItem, BatchGetItem and "
        "TransactGetItems answers)",
        "moto wrote every answer through its generic serializer, about 2 ms an item: a search that "
        "reads an owner's 100,000 links took minutes, a batch change's page spent most of its time "
        "in its BatchGetItem answers. A read's answer is already DynamoDB JSON: it is written with "
        "json.dumps now (binary in base64, times as epoch seconds), the same answers to boto3.",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/dynamodb/test_results.py",
    ),
    Patch(
        dynamodb_compact.install,
        "Item.__init__",
        "moto held in every item its own copy of each attribute name, of values thousands of items "
        "share (a bulk link's owner, listing partition, job id) and of its key (twice): names, short "
        "values and key objects are shared now (docs/capacity.md has the bytes per link).",
        "install_moto_fixes (the stack, tests/conftest.py); tests/local_stack/dynamodb/test_compact.py",
    ),
    Patch(
        history.install,
        "CloudWatchResponse.describe_alarm_history",
        "moto 5 has no DescribeAlarmHistory; the alarm evaluator's history is answered through it.",
        "AlarmEvaluator (local_stack/cloudwatch/alarms.py)",
    ),
    Patch(
        subscriptions.install,
        "LogStream._send_log_events (a Lambda destination)",
        "moto runs a subscribed function in Docker; events put into a subscribed log group (the "
        "edge's logs) go to the stack's Lambda runtime instead, as CloudWatch Logs delivers them.",
        "CloudWatchService.attach (local_stack/cloudwatch/service.py); "
        "tests/local_stack/cloudwatch/test_subscriptions.py",
    ),
)


def install_moto_fixes() -> None:
    """The fixes every embedded AWS runs with, in moto's classes (so also for an in-process
    ``mock_aws``); idempotent. The embedded AWS installs its own (``server.install_moto_fixes``)."""
    server.install_moto_fixes()
    dynamodb_compact.install_slotted_values()  # first: before any DynamoDB value is built
    dynamodb_compact.install_slotted_items()
    dynamodb_index.install()
    dynamodb_compact.install()
    dynamodb_results.install()
    # Expressions DynamoDB refuses are ValidationException, not a 500.
    dynamodb_expressions.install()
    # A stack whose bucket holds objects ends DELETE_FAILED, as on AWS.
    delete_refusals.install()
    # A bucket policy's aws:SecureTransport condition evaluated (moto ignores conditions).
    bucket_policies.install()
    # GetAccountSettings, and reservations that would leave fewer than 100 executions refused.
    lambda_quota.install()
    # A multipart upload completed with one copy of the object in memory.
    s3_multipart.install()
    # Firehose's prefixes, record format conversion (Parquet) and PutRecordBatch limits.
    firehose_delivery.install()
    # Athena's queries answered by DuckDB over the Glue tables' objects.
    athena_queries.install()


def install_all() -> None:
    """Every patch, in this process's moto."""
    for patch in PATCHES:
        patch.install()
