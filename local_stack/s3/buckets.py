"""S3, locally: buckets made from the template's AWS::S3::Bucket properties on the embedded AWS
(moto's S3 backend, in process), and their event notifications delivered to the local functions.

moto keeps objects, answers presigned URLs (the functions' boto3 signs them for the embedded AWS's
loopback address, because AWS_ENDPOINT_URL points there) and matches a bucket's notification
configuration against each created object, but it can only invoke Lambda functions it runs itself
(with Docker). Here its Lambda delivery is replaced: each matching ObjectCreated event
(Put, Post, Copy, CompleteMultipartUpload) becomes an asynchronous invocation of the local
function, with the event in the shape AWS gives it
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html,
the shape of `sam local generate-event s3 put`). As on AWS, S3 invokes the function
asynchronously once the object is stored (https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html)
and a failed invocation is retried like any asynchronous one.

Presigned URLs are checked as S3 checks them (``PresignedUrlGate``): an expired one, or one whose
signature does not match the request (another Content-Length than the signed one), is refused.

Not emulated: lifecycle rules are stored but never expire objects (like DynamoDB TTL), CORS is
moto's (it allows any origin), and bucket policies are not created."""

import copy
import hmac
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, quote

import moto.s3.notifications as moto_notifications
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

log = logging.getLogger(__name__)

# Function ARN -> delivered? (asynchronous invoke of the event).
Deliver = Callable[[str, dict[str, Any]], bool]
_REQUESTER = "A1LOCALSTACKEXAMPLE"


def create_bucket(client: Any, name: str, properties: dict[str, Any], region: str) -> None:
    """Create a bucket and apply what its CloudFormation properties configure."""
    arguments: dict[str, Any] = {"Bucket": name}
    if region != "us-east-1":
        arguments["CreateBucketConfiguration"] = {"LocationConstraint": region}
    client.create_bucket(**arguments)
    if "BucketEncryption" in properties:
        rules = [
            {"ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"]}
            for rule in properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
            if "ServerSideEncryptionByDefault" in rule
        ]
        client.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
    if "PublicAccessBlockConfiguration" in properties:
        client.put_public_access_block(
            Bucket=name,
            PublicAccessBlockConfiguration=_booleans(properties["PublicAccessBlockConfiguration"]),
        )
    if rules := properties.get("LifecycleConfiguration", {}).get("Rules"):
        client.put_bucket_lifecycle_configuration(
            Bucket=name, LifecycleConfiguration={"Rules": [lifecycle_rule(rule) for rule in rules]}
        )
    if rules := properties.get("CorsConfiguration", {}).get("CorsRules"):
        client.put_bucket_cors(
            Bucket=name, CORSConfiguration={"CORSRules": [cors_rule(rule) for rule in rules]}
        )
    if configuration := properties.get("NotificationConfiguration"):
        client.put_bucket_notification_configuration(
            Bucket=name, NotificationConfiguration=notification_configuration(configuration)
        )


def lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A lifecycle rule as CloudFormation writes it -> as PutBucketLifecycleConfiguration takes it."""
    converted: dict[str, Any] = {"ID": rule.get("Id", ""), "Status": rule["Status"]}
    converted["Filter"] = {"Prefix": rule.get("Prefix", "")}
    if "ExpirationInDays" in rule:
        converted["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "AbortIncompleteMultipartUpload" in rule:
        days = int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])
        converted["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": days}
    return converted


def cors_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A CORS rule as CloudFormation writes it -> as PutBucketCors takes it."""
    converted: dict[str, Any] = {
        key: rule[key] for key in ("AllowedMethods", "AllowedOrigins", "AllowedHeaders") if key in rule
    }
    if "ExposedHeaders" in rule:
        converted["ExposeHeaders"] = rule["ExposedHeaders"]
    if "MaxAge" in rule:
        converted["MaxAgeSeconds"] = int(rule["MaxAge"])
    return converted


def notification_configuration(configuration: dict[str, Any]) -> dict[str, Any]:
    """Lambda notifications as CloudFormation writes them -> as PutBucketNotificationConfiguration
    takes them (the other targets are not used by this template)."""
    return {
        "LambdaFunctionConfigurations": [
            {
                "LambdaFunctionArn": entry["Function"],
                "Events": [entry["Event"]],
                **(
                    {"Filter": {"Key": {"FilterRules": entry["Filter"]["S3Key"]["Rules"]}}}
                    if "Filter" in entry
                    else {}
                ),
            }
            for entry in configuration.get("LambdaConfigurations", [])
        ]
    }


def _booleans(settings: dict[str, Any]) -> dict[str, bool]:
    return {key: value in (True, "true", "True") for key, value in settings.items()}


def deliver_notifications(deliver: Deliver) -> Callable[[], None]:
    """Send the Lambda notifications of every bucket through ``deliver``; a function that undoes it."""
    original = moto_notifications._invoke_awslambda

    def invoke(account_id: str, event_body: Any, fn_arn: str, region_name: str) -> None:
        event = lambda_event(event_body)
        if not deliver(fn_arn, event):
            log.warning("S3 notification for %s not delivered: no such local function", fn_arn)

    moto_notifications._invoke_awslambda = invoke  # type: ignore[assignment]

    def undo() -> None:
        moto_notifications._invoke_awslambda = original

    return undo


def lambda_event(moto_event: dict[str, Any]) -> dict[str, Any]:
    """moto's notification body completed to what S3 sends a function: the requester, request and
    response elements, the bucket owner and the object's sequencer."""
    event = copy.deepcopy(moto_event)
    for record in event.get("Records", []):
        record.setdefault("userIdentity", {"principalId": _REQUESTER})
        record.setdefault("requestParameters", {"sourceIPAddress": "127.0.0.1"})
        record.setdefault(
            "responseElements",
            {"x-amz-request-id": secrets.token_hex(8).upper(), "x-amz-id-2": secrets.token_urlsafe(48)},
        )
        s3 = record.get("s3", {})
        s3.get("bucket", {}).setdefault("ownerIdentity", {"principalId": _REQUESTER})
        s3.get("object", {}).setdefault("sequencer", secrets.token_hex(9).upper())
    return event


# ---- presigned URLs ---------------------------------------------------------------------------------

_EXPIRED = ("AccessDenied", "Request has expired")
_MISMATCH = (
    "SignatureDoesNotMatch",
    "The request signature we calculated does not match the signature you provided.",
)


def presigned_url_problem(
    environ: dict[str, Any], secrets: Mapping[str, str], now: datetime | None = None
) -> tuple[str, str] | None:
    """Why S3 would refuse a presigned (SigV4 query string) request, or None: it expired
    (X-Amz-Date + X-Amz-Expires), or its signature does not match the request as it arrived, for
    instance another Content-Length than the one signed. Requests that are not presigned, and
    those signed with keys not in ``secrets`` (moto takes any), are not checked.
    https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html"""
    query = environ.get("QUERY_STRING", "")
    params = parse_qs(query, keep_blank_values=True)
    # A browser's CORS preflight (OPTIONS, to the same URL) carries no signature of its own: S3
    # answers it from the bucket's CORS rules alone.
    # https://docs.aws.amazon.com/AmazonS3/latest/API/RESTOPTIONSobject.html
    if "X-Amz-Signature" not in params or environ.get("REQUEST_METHOD") == "OPTIONS":
        return None
    try:
        access_key, _, region, service, _ = params["X-Amz-Credential"][0].split("/")
        amz_date = params["X-Amz-Date"][0]
        expires = int(params["X-Amz-Expires"][0])
        signed = params["X-Amz-SignedHeaders"][0].split(";")
        start = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except (KeyError, ValueError):
        return ("AuthorizationQueryParametersError", "The presigned URL's parameters are malformed.")
    if (now or datetime.now(UTC)) > start + timedelta(seconds=expires):
        return _EXPIRED
    secret = secrets.get(access_key)
    if secret is None:
        return None
    headers = {name: _header(environ, name) for name in signed if name != "host"}
    path = (
        environ.get("RAW_URI") or environ.get("REQUEST_URI") or quote(environ.get("PATH_INFO", ""))
    ).split("?")[0]
    unsigned = "&".join(part for part in query.split("&") if not part.startswith("X-Amz-Signature="))
    request = AWSRequest(
        method=environ["REQUEST_METHOD"],
        url=f"http://{environ.get('HTTP_HOST', '')}{path}?{unsigned}",
        headers=headers,
    )
    request.context["timestamp"] = amz_date
    signer = S3SigV4QueryAuth(Credentials(access_key, secret), service, region, expires)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return None if hmac.compare_digest(expected, params["X-Amz-Signature"][0]) else _MISMATCH


def _header(environ: dict[str, Any], name: str) -> str:
    key = name.upper().replace("-", "_")
    value = environ.get(key if key in ("CONTENT_LENGTH", "CONTENT_TYPE") else f"HTTP_{key}", "")
    return str(value)


class PresignedUrlGate:
    """In front of the embedded AWS: refuses presigned requests that S3 would refuse (expired, or
    not matching their signature), with S3's error document; and keeps the body of a form-encoded
    PUT (curl --data-binary sends that content type), which moto's request parsing would take for
    form fields and lose, while S3 stores it like any other body."""

    def __init__(self, app: Callable[..., Iterable[bytes]], secrets: Mapping[str, str]) -> None:
        self._app = app
        # Not a copy: the stack adds the functions' keys after the server has started.
        self._secrets = secrets

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        problem = presigned_url_problem(environ, self._secrets)
        if problem is not None:
            code, message = problem
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
            ).encode()
            start_response(
                "403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))]
            )
            return [body]
        unsigned = "HTTP_AUTHORIZATION" not in environ
        if (
            unsigned
            and environ.get("REQUEST_METHOD") == "PUT"
            and environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded")
        ):
            environ["CONTENT_TYPE"] = "application/octet-stream"
        return self._app(environ, start_response)
