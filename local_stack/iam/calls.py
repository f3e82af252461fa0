"""From an AWS API request to what IAM authorises: (action, resource ARN) pairs, and AWS's own
AccessDenied answer in the request's protocol.

How API operations map to IAM actions and resources follows the Service Authorization Reference
("Actions, resources, and condition keys for Amazon DynamoDB / Amazon SQS / Amazon SNS / Amazon
CloudWatch / Amazon EventBridge / AWS Lambda") and the services' guides:
- DynamoDB: an action per operation on the table ARN; Query and Scan with IndexName on the index
  ARN (table/<t>/index/<i>); BatchGetItem and BatchWriteItem need their own action on every table
  they name; a transaction authorises each of its items as PutItem, UpdateItem, DeleteItem,
  ConditionCheckItem or GetItem on its table ("Using IAM with DynamoDB transactions").
- SQS: the batch operations authorise as the single ones (SendMessageBatch -> sqs:SendMessage,
  DeleteMessageBatch -> sqs:DeleteMessage, ChangeMessageVisibilityBatch ->
  sqs:ChangeMessageVisibility); every queue operation, GetQueueUrl included, is on the queue ARN;
  ListQueues is on "*". botocore speaks SQS's JSON protocol (X-Amz-Target: AmazonSQS.<Op>); the
  query protocol (Action=<Op>) is read too.
- SNS: PublishBatch authorises as sns:Publish; topic operations on the topic ARN.
- CloudWatch (signing name "monitoring", action prefix "cloudwatch"): alarm operations on the alarm
  ARN; the rest (PutMetricData, ...) on "*".
- EventBridge: PutEvents on each entry's event bus; rule operations on the rule ARN.
- Firehose: each operation on the delivery stream's ARN (deliverystream/<name>); PutRecordBatch
  is firehose:PutRecordBatch ("Actions, resources, and condition keys for Amazon Data Firehose").
- Athena: each operation on its workgroup's ARN (workgroup/<name>: the request's WorkGroup, or the
  one its QueryExecutionId ran in; "primary" when StartQueryExecution names none).
- Lambda: Invoke is lambda:InvokeFunction on the function ARN (checked by the Lambda endpoint).
- CloudFront (REST): ListDistributions on "*"; CreateInvalidation, ListInvalidations and
  GetInvalidation on the distribution's ARN (arn:aws:cloudfront::<account>:distribution/<id>).
- S3 (REST, the operation told by method, path and subresource; path-style URLs, as boto3 signs
  them for the embedded AWS's loopback address): object operations on
  arn:aws:s3:::<bucket>/<key>; GetObject and HeadObject -> s3:GetObject; PutObject,
  CreateMultipartUpload, UploadPart, CompleteMultipartUpload -> s3:PutObject (CopyObject also
  s3:GetObject on its source); AbortMultipartUpload -> s3:AbortMultipartUpload; ListParts ->
  s3:ListMultipartUploadParts; DeleteObject -> s3:DeleteObject. Bucket operations on
  arn:aws:s3:::<bucket>: ListObjects(V2) and HeadBucket -> s3:ListBucket, ListMultipartUploads
  -> s3:ListBucketMultipartUploads, DeleteObjects -> s3:DeleteObject on <bucket>/*, a
  configuration subresource (?notification, ?lifecycle, ...) -> s3:Get/PutBucket<Name> or
  s3:Get/PutLifecycleConfiguration. A presigned URL authorises as the same operation, with the
  permissions of whoever signed it ("Sharing objects with presigned URLs": "the presigned URL
  ... uses the permissions of the IAM principal who created it").

The error answers follow each protocol (botocore parses them into the same ClientError as AWS's):
DynamoDB and EventBridge answer 400 `AccessDeniedException` in JSON; SQS and CloudWatch, JSON
services compatible with their former query protocol, answer 403 with `x-amzn-query-error:
AccessDenied;Sender` (botocore's error code is then `AccessDenied`, as before), or the XML error in
the query protocol; SNS answers 403 `AuthorizationError` in XML; Lambda 403
`AccessDeniedException`. The message is AWS's: "User: <assumed-role ARN> is not authorized to
perform: <action> on resource: <ARN> because no identity-based policy allows the <action> action"
(SQS writes the action in lower case, SNS as `SNS:Publish`)."""

import gzip
import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

_SQS_SINGLE_ACTIONS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
_TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
_XML_NAMESPACES = {
    "sqs": "http://queue.amazonaws.com/doc/2012-11-05/",
    "sns": "http://sns.amazonaws.com/doc/2010-03-31/",
    "monitoring": "http://monitoring.amazonaws.com/doc/2010-08-01/",
}
JSON, QUERY, REST_JSON, REST_XML = "json", "query", "rest-json", "rest-xml"


@dataclass(frozen=True)
class Access:
    """One thing IAM authorises: an action on a resource ("*" for actions without one), with the
    condition keys that this access alone carries."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Call:
    """An API request as IAM sees it."""

    service: str  # the SigV4 signing name: dynamodb, sqs, sns, monitoring, events, lambda
    operation: str
    protocol: str
    accesses: tuple[Access, ...]
    region: str = ""


class UnreadableCall(ValueError):
    """A request whose operation cannot be told (left for the service itself to refuse)."""


class UnmappedService(ValueError):
    """A request to a service whose operations are not mapped to IAM actions here."""


class _Params:
    """The parameters of a JSON or a query-protocol request, read the same way."""

    def __init__(
        self, document: Mapping[str, Any] | None = None, form: Mapping[str, list[str]] | None = None
    ):
        self.document: Mapping[str, Any] = document or {}
        self._form = form or {}

    def text(self, name: str) -> str | None:
        if name in self.document:
            value = self.document[name]
            return value if isinstance(value, str) else None
        values = self._form.get(name)
        return values[0] if values else None

    def texts(self, name: str) -> list[str]:
        """A list parameter: a JSON array, or query members (Name.member.1, Name.member.2, ...)."""
        if name in self.document:
            value = self.document[name]
            return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
        members = re.compile(re.escape(name) + r"\.member\.(\d+)$")
        numbered = sorted(
            (int(match.group(1)), values[0])
            for key, values in self._form.items()
            if (match := members.match(key)) and values
        )
        return [value for _, value in numbered]


@dataclass(frozen=True)
class _Scope:
    region: str
    account: str


def parse_call(
    service: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    query: str = "",
    path: str = "/",
    method: str = "POST",
    region: str,
    account: str,
) -> Call:
    """The operation of a request to the embedded AWS and the accesses it needs."""
    if service == "s3":
        return s3_call(method, path, query, headers, region)
    if service == "cloudfront":
        return cloudfront_call(method, path, region, account)
    mapper = _MAPPERS.get(service)
    if mapper is None:
        raise UnmappedService(service)
    target = headers.get("x-amz-target", "")
    if headers.get("content-encoding", "").lower() == "gzip":
        body = gzip.decompress(body)
    try:
        if target:
            operation = target.rsplit(".", 1)[-1]
            document = json.loads(body) if body.strip() else {}
            params, protocol = _Params(document=document), JSON
        else:
            form = parse_qs(query) | parse_qs(body.decode("utf-8"))
            operation = (form.get("Action") or [""])[0]
            params, protocol = _Params(form=form), QUERY
    except (ValueError, UnicodeDecodeError) as exc:
        raise UnreadableCall(str(exc)) from exc
    if not operation:
        raise UnreadableCall("no operation")
    accesses = mapper(operation, params, _Scope(region, account), path)
    # A transaction of 100 puts on one table is one access to decide.
    return Call(service, operation, protocol, tuple(dict.fromkeys(accesses)), region)


# Bucket subresources (?name) -> the IAM action's name after Get/Put ("Bucket" + it unless listed).
_S3_BUCKET_SUBRESOURCES = {
    "notification": "BucketNotification",
    "lifecycle": "LifecycleConfiguration",
    "cors": "BucketCORS",
    "encryption": "EncryptionConfiguration",
    "publicAccessBlock": "BucketPublicAccessBlock",
    "policy": "BucketPolicy",
    "versioning": "BucketVersioning",
    "tagging": "BucketTagging",
    "acl": "BucketAcl",
    "location": "BucketLocation",
    "ownershipControls": "BucketOwnershipControls",
}


def s3_call(method: str, path: str, query: str, headers: Mapping[str, str], region: str) -> Call:
    """An S3 REST request (path style; ``path`` decoded, as WSGI's PATH_INFO) -> its operation and
    accesses."""
    params = parse_qs(query, keep_blank_values=True)
    bucket, _, key = path.lstrip("/").partition("/")
    method = method.upper()
    if not bucket:
        return _s3("ListBuckets", region, Access("s3:ListAllMyBuckets", "*"))
    bucket_arn = f"arn:aws:s3:::{bucket}"
    if key:
        return _s3_object(method, f"{bucket_arn}/{key}", params, headers, region)
    if method == "POST" and "delete" in params:
        return _s3("DeleteObjects", region, Access("s3:DeleteObject", f"{bucket_arn}/*"))
    if method == "GET" and "uploads" in params:
        return _s3("ListMultipartUploads", region, Access("s3:ListBucketMultipartUploads", bucket_arn))
    for subresource, name in _S3_BUCKET_SUBRESOURCES.items():
        if subresource in params:
            verb = "Get" if method in ("GET", "HEAD") else "Put" if method in ("PUT", "POST") else "Delete"
            action = f"s3:{verb}{name}"
            if subresource == "location":
                action = "s3:GetBucketLocation"
            return _s3(f"{verb}{name}", region, Access(action, bucket_arn))
    operation = {"PUT": "CreateBucket", "DELETE": "DeleteBucket", "HEAD": "HeadBucket"}.get(
        method, "ListObjects"
    )
    action = {"CreateBucket": "s3:CreateBucket", "DeleteBucket": "s3:DeleteBucket"}.get(
        operation, "s3:ListBucket"
    )
    # A listing carries its prefix as the condition key s3:prefix ("Amazon S3 condition key
    # examples", "Limit the listing to a folder"): a policy that grants ListBucket under a prefix
    # refuses a listing without it.
    listed = (("s3:prefix", params["prefix"][0]),) if "prefix" in params else ()
    return _s3(operation, region, Access(action, bucket_arn, listed))


def _s3_object(
    method: str, arn: str, params: Mapping[str, list[str]], headers: Mapping[str, str], region: str
) -> Call:
    upload = "uploadId" in params
    if method in ("GET", "HEAD"):
        plain = "GetObject" if method == "GET" else "HeadObject"
        operation, action = ("ListParts", "ListMultipartUploadParts") if upload else (plain, "GetObject")
    elif method == "DELETE":
        operation = action = "AbortMultipartUpload" if upload else "DeleteObject"
    elif method == "POST":
        operation = "CreateMultipartUpload" if "uploads" in params else "CompleteMultipartUpload"
        action = "PutObject"
    elif source := headers.get("x-amz-copy-source"):
        source_arn = "arn:aws:s3:::" + unquote(source).lstrip("/").split("?", 1)[0]
        return _s3("CopyObject", region, Access("s3:PutObject", arn), Access("s3:GetObject", source_arn))
    else:
        operation, action = ("UploadPart" if "partNumber" in params else "PutObject"), "PutObject"
    return _s3(operation, region, Access(f"s3:{action}", arn))


def _s3(operation: str, region: str, *accesses: Access) -> Call:
    return Call("s3", operation, REST_XML, accesses, region)


# CloudFront's REST paths under its API version: the edge's invalidations (shortener.links.edge_cache).
_CLOUDFRONT_INVALIDATIONS = re.compile(
    r"/\d{4}-\d{2}-\d{2}/distribution/(?P<id>[^/]+)/invalidation(?P<one>/[^/]+)?"
)
_CLOUDFRONT_DISTRIBUTIONS = re.compile(r"/\d{4}-\d{2}-\d{2}/distribution/?")


def cloudfront_call(method: str, path: str, region: str, account: str) -> Call:
    """CloudFront's distribution listing (on "*") and invalidations (on the distribution's ARN,
    arn:aws:cloudfront::<account>:distribution/<id>); any other operation is unmapped."""
    path = urlsplit(path).path
    if method == "GET" and _CLOUDFRONT_DISTRIBUTIONS.fullmatch(path):
        return Call(
            "cloudfront",
            "ListDistributions",
            REST_XML,
            (Access("cloudfront:ListDistributions", "*"),),
            region,
        )
    found = _CLOUDFRONT_INVALIDATIONS.fullmatch(path)
    if found is None:
        raise UnmappedService("cloudfront")
    if method == "POST":
        operation = "CreateInvalidation"
    else:
        operation = "GetInvalidation" if found["one"] else "ListInvalidations"
    arn = f"arn:aws:cloudfront::{account}:distribution/{found['id']}"
    return Call("cloudfront", operation, REST_XML, (Access(f"cloudfront:{operation}", arn),), region)


def invoke_call(function_arn: str) -> Call:
    """Lambda's Invoke, on the function (as named: a qualified ARN stays qualified)."""
    region = function_arn.split(":")[3]
    return Call("lambda", "Invoke", REST_JSON, (Access("lambda:InvokeFunction", function_arn),), region)


# ---- per service --------------------------------------------------------------------------------


def _dynamodb(operation: str, params: _Params, scope: _Scope, _: str) -> list[Access]:
    def table(name: str) -> str:
        if name.startswith("arn:"):
            return name
        return f"arn:aws:dynamodb:{scope.region}:{scope.account}:table/{name}"

    document = params.document
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [Access(f"dynamodb:{operation}", table(name)) for name in document.get("RequestItems", {})]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        # Each item is its own operation, with the transaction as dynamodb:EnclosingOperation.
        enclosing = (("dynamodb:EnclosingOperation", operation),)
        items = dict.fromkeys(
            (_TRANSACTION_ACTIONS.get(kind, kind), str(request.get("TableName", "")))
            for item in document.get("TransactItems", [])
            for kind, request in item.items()
        )
        return [Access(f"dynamodb:{action}", table(name), enclosing) for action, name in items]
    action = f"dynamodb:{operation}"
    if "StreamArn" in document:
        return [Access(action, str(document["StreamArn"]))]
    name = params.text("TableName") or params.text("ResourceArn")
    if name is None:
        return [Access(action, "*")]
    index = params.text("IndexName")
    if index and operation in ("Query", "Scan"):
        return [Access(action, f"{table(name)}/index/{index}")]
    return [Access(action, table(name))]


def _sqs(operation: str, params: _Params, scope: _Scope, path: str) -> list[Access]:
    action = "sqs:" + _SQS_SINGLE_ACTIONS.get(operation, operation)

    def queue(name: str, account: str | None = None) -> str:
        return f"arn:aws:sqs:{scope.region}:{account or scope.account}:{name}"

    if operation in ("GetQueueUrl", "CreateQueue"):
        name = params.text("QueueName") or ""
        return [Access(action, queue(name, params.text("QueueOwnerAWSAccountId")))]
    url = params.text("QueueUrl")
    parts = urlsplit(url).path.strip("/").split("/") if url else path.strip("/").split("/")
    if len(parts) == 2 and all(parts):
        account, name = parts
        return [Access(action, queue(name, account))]
    return [Access(action, "*")]


def _sns(operation: str, params: _Params, scope: _Scope, _: str) -> list[Access]:
    action = "sns:" + ("Publish" if operation == "PublishBatch" else operation)
    if operation == "CreateTopic":
        return [Access(action, f"arn:aws:sns:{scope.region}:{scope.account}:{params.text('Name') or ''}")]
    arn = params.text("TopicArn") or params.text("TargetArn") or params.text("ResourceArn")
    return [Access(action, arn or "*")]


def _cloudwatch(operation: str, params: _Params, scope: _Scope, _: str) -> list[Access]:
    action = f"cloudwatch:{operation}"
    names = params.texts("AlarmNames") or [name for name in [params.text("AlarmName")] if name]
    if not names:
        return [Access(action, params.text("ResourceARN") or "*")]
    return [
        Access(action, f"arn:aws:cloudwatch:{scope.region}:{scope.account}:alarm:{name}") for name in names
    ]


def _events(operation: str, params: _Params, scope: _Scope, _: str) -> list[Access]:
    action = f"events:{operation}"
    prefix = f"arn:aws:events:{scope.region}:{scope.account}"

    def bus(name: str | None) -> str:
        name = name or "default"
        return name if name.startswith("arn:") else f"{prefix}:event-bus/{name}"

    if operation == "PutEvents":
        entries = params.document.get("Entries", [])
        return [
            Access(action, arn) for arn in dict.fromkeys(bus(entry.get("EventBusName")) for entry in entries)
        ]
    rule = params.text("Rule") or (params.text("Name") if "Rule" in operation else None)
    if rule:
        bus_name = params.text("EventBusName")
        path = rule if not bus_name or bus_name == "default" else f"{bus_name.rsplit('/', 1)[-1]}/{rule}"
        return [Access(action, f"{prefix}:rule/{path}")]
    if "EventBus" in operation and params.text("Name"):
        return [Access(action, bus(params.text("Name")))]
    return [Access(action, "*")]


def _firehose(operation: str, params: _Params, scope: _Scope, _: str) -> list[Access]:
    name = params.text("DeliveryStreamName")
    if not name:
        return [Access(f"firehose:{operation}", "*")]
    stream = f"arn:aws:firehose:{scope.region}:{scope.account}:deliverystream/{name}"
    return [Access(f"firehose:{operation}", stream)]


def _athena(operation: str, params: _Params, scope: _Scope, _: str) -> list[Access]:
    from local_stack.athena.queries import work_group_of

    name = params.text("WorkGroup") or params.text("Name")
    execution_id = params.text("QueryExecutionId")
    if execution_id and not name:
        name = work_group_of(scope.account, scope.region, execution_id)
    if operation == "StartQueryExecution" and not name:
        name = "primary"
    resource = f"arn:aws:athena:{scope.region}:{scope.account}:workgroup/{name}" if name else "*"
    return [Access(f"athena:{operation}", resource)]


_MAPPERS: dict[str, Callable[[str, _Params, _Scope, str], list[Access]]] = {
    "athena": _athena,
    "dynamodb": _dynamodb,
    "firehose": _firehose,
    "sqs": _sqs,
    "sns": _sns,
    "monitoring": _cloudwatch,
    "events": _events,
}


# ---- the refusal --------------------------------------------------------------------------------


def shown_action(service: str, action: str) -> str:
    """The action as the service writes it in its AccessDenied message."""
    if service == "sqs":
        return action.lower()
    if service == "sns":
        return "SNS:" + action.split(":", 1)[1]
    return action


def denial_message(principal_arn: str, service: str, access: Access, explicit: bool) -> str:
    """AWS's AccessDenied message for an identity-based refusal."""
    action = shown_action(service, access.action)
    on = "" if access.resource == "*" else f" on resource: {access.resource}"
    reason = (
        "with an explicit deny in an identity-based policy"
        if explicit
        else f"because no identity-based policy allows the {action} action"
    )
    return f"User: {principal_arn} is not authorized to perform: {action}{on} {reason}"


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, headers, body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


def unmapped_message(principal_arn: str, service: str) -> str:
    """The refusal of a call to a service that the local stack cannot authorise."""
    return (
        f"User: {principal_arn} is not authorized to call {service}: the local stack does not map "
        f"{service} requests to IAM actions (local_stack/iam/calls.py), so it refuses them"
    )


def denial_answer(call: Call, message: str) -> Answer:
    """The refusal of ``call`` as its service sends it."""
    request_id = str(uuid.uuid4())
    if call.protocol == QUERY:
        code = "AuthorizationError" if call.service == "sns" else "AccessDenied"
        namespace = _XML_NAMESPACES.get(call.service, "")
        xml = (
            f'<?xml version="1.0"?><ErrorResponse xmlns="{namespace}"><Error><Type>Sender</Type>'
            f"<Code>{code}</Code><Message>{escape(message)}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        )
        return Answer(403, (("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)), xml.encode())
    if call.protocol == REST_XML:
        # S3's error document ("Error responses", Amazon S3 API Reference).
        xml = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
            f"<Message>{escape(message)}</Message><RequestId>{request_id}</RequestId></Error>"
        )
        return Answer(
            403, (("Content-Type", "application/xml"), ("x-amz-request-id", request_id)), xml.encode()
        )
    if call.protocol == REST_JSON:
        body = json.dumps({"Type": "User", "Message": message}).encode()
        headers = (
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", "AccessDeniedException"),
            ("x-amzn-RequestId", request_id),
        )
        return Answer(403, headers, body)
    query_compatible = call.service in ("sqs", "monitoring")
    json_version = "1.1" if call.service == "events" else "1.0"
    headers_list = [
        ("Content-Type", f"application/x-amz-json-{json_version}"),
        ("x-amzn-RequestId", request_id),
    ]
    if query_compatible:
        headers_list.append(("x-amzn-query-error", "AccessDenied;Sender"))
    body = json.dumps(
        {"__type": "com.amazon.coral.service#AccessDeniedException", "Message": message}
    ).encode()
    return Answer(403 if query_compatible else 400, tuple(headers_list), body)
