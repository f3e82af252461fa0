"""boto3 clients, created lazily (nothing touches AWS at import time) and once per container.

The endpoint comes from boto3's own AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE> variables, so the
same code talks to AWS or to the local stack."""

import os
import platform
import random
import time
from collections.abc import Callable, Iterator
from functools import lru_cache, wraps
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from shortener import aws_serializer as serializer
from shortener import aws_usage as usage
from shortener.exceptions import StorageThrottledError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

# botocore rebuilds its User-Agent header from a dozen sanitised parts twice per request, about a
# tenth of a bulk row's CPU (make bench ARGS=cpu). Made once here, it still names the SDK, Python,
# the platform and the Lambda execution environment (exec-env/..., which the local stack's request
# log reads to tell a function's requests from its own), and the application.
# boto3 appends "Botocore/<version>" itself.
_USER_AGENT = " ".join(
    [
        f"Boto3/{boto3.__version__} Python/{platform.python_version()}",
        f"{platform.system()}/{platform.release()}",
        *([f"exec-env/{os.environ['AWS_EXECUTION_ENV']}"] if os.environ.get("AWS_EXECUTION_ENV") else []),
        "app/shortener",
    ]
)
# Background work (loops, splits, results, batches) retries adaptively: after a throttle, botocore
# paces the container's requests to what the table takes, which is what a backlog needs. A function
# that answers a waiting caller (the API, the authorizer) sets boto3's own AWS_RETRY_MODE=standard
# and AWS_MAX_ATTEMPTS in the template: adaptive pacing can space a quiet container's requests
# down to two seconds apart (botocore's lowest send rate, 0.5 a second), so a request that meets a
# throttling table would outlast API Gateway's 29 seconds; standard retries back off for about a
# second, then the caller gets the API's 503 and its Retry-After. The pool fits a container's threads.
_RETRIES: Any = {
    "mode": os.environ.get("AWS_RETRY_MODE", "adaptive"),
    # As boto3 reads AWS_MAX_ATTEMPTS: every attempt, the first included (nine: eight retries).
    "total_max_attempts": int(os.environ.get("AWS_MAX_ATTEMPTS", "9")),
}
_CONFIG = Config(retries=_RETRIES, max_pool_connections=50, user_agent=_USER_AGENT)
# Presigned URLs need Signature Version 4 (botocore would presign S3 with version 2 by default).
_S3_CONFIG = _CONFIG.merge(Config(signature_version="s3v4"))
# botocore's client-side check of every request against the service model was the largest share of
# a bulk row's CPU (make bench ARGS=cpu). Every DynamoDB request is built by the stores
# (shortener/*/store*.py) from typed values (mypy checks them against the boto3 stubs), and DynamoDB
# itself still refuses a malformed request (ValidationException), so the check is skipped for DynamoDB.
_DYNAMODB_CONFIG = _CONFIG.merge(Config(parameter_validation=False))

# Cognito waits 5 seconds for a user pool trigger, then fails the sign-in: a write on the sign-in's
# path gives up within that (two tries of at most a second to connect and a second to answer).
_SIGN_IN_PATH_CONFIG = _DYNAMODB_CONFIG.merge(
    Config(connect_timeout=1, read_timeout=1, retries={"mode": "standard", "max_attempts": 2})
)


# Each client counts its requests on the meter of the work that makes them (shortener.aws_usage).
@lru_cache(maxsize=1)
def dynamodb() -> "DynamoDBClient":
    client = serializer.install(boto3.client("dynamodb", config=_DYNAMODB_CONFIG))
    return usage.install(client)  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def dynamodb_on_sign_in_path() -> "DynamoDBClient":
    """DynamoDB for the user pool's triggers: bounded well inside Cognito's wait for them."""
    client = serializer.install(boto3.client("dynamodb", config=_SIGN_IN_PATH_CONFIG))
    return usage.install(client)  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def sqs() -> "SQSClient":
    return usage.install_sqs(boto3.client("sqs", config=_CONFIG))  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def lambda_() -> "LambdaClient":
    return usage.install(boto3.client("lambda", config=_CONFIG))  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def s3() -> "S3Client":
    return usage.install(boto3.client("s3", config=_S3_CONFIG))  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def events() -> "EventBridgeClient":
    return usage.install(boto3.client("events", config=_CONFIG))  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def sns() -> "SNSClient":
    return usage.install(boto3.client("sns", config=_CONFIG))  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def cloudfront() -> Any:
    """CloudFront (the edge's invalidations); untyped: the project installs no CloudFront stubs."""
    return usage.install(boto3.client("cloudfront", config=_CONFIG))


@lru_cache(maxsize=1)
def firehose() -> Any:
    """Firehose (the click events' delivery stream); untyped: the project installs no Firehose stubs."""
    return usage.install(boto3.client("firehose", config=_CONFIG))


@lru_cache(maxsize=1)
def athena() -> Any:
    """Athena (the click events' queries); untyped: the project installs no Athena stubs."""
    return usage.install(boto3.client("athena", config=_CONFIG))


def reset_clients() -> None:
    """Forget the cached clients (tests that change endpoints or credentials)."""
    for factory in (
        dynamodb,
        dynamodb_on_sign_in_path,
        sqs,
        lambda_,
        s3,
        events,
        sns,
        cloudfront,
        firehose,
        athena,
    ):
        factory.cache_clear()


# Error codes that mean "slow down", not "no": botocore's retries absorb most of them; those that
# reach the code after its retries are answered as a busy service, never as a refusal.
THROTTLING_ERRORS = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "Throttling",
        "TooManyRequestsException",
        "RequestThrottled",
    }
)


def error_code(exc: ClientError) -> str:
    """The service's error code of a failed call (``ConditionalCheckFailedException``, ...)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def is_throttling(exc: ClientError) -> bool:
    """Whether a call failed because the service throttled it (after botocore's own retries)."""
    return error_code(exc) in THROTTLING_ERRORS


def backoff_delays(
    attempts: int, *, base: float, cap: float, rng: Callable[[float, float], float] = random.uniform
) -> Iterator[float]:
    """Pauses before each of ``attempts - 1`` retries: exponential with full jitter, as AWS's
    guidance on retries with backoff recommends (so throttled writers spread out instead of
    retrying in step)."""
    for attempt in range(attempts - 1):
        yield rng(0, min(cap, base * 2**attempt))


def throttling_is_busy[**P, R](method: Callable[P, R]) -> Callable[P, R]:
    """Decorate a data-access call so that throttling which outlasted the retries reaches the
    caller as ``StorageThrottledError`` (the API's 503), never as an unexplained failure."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ClientError as exc:
            if is_throttling(exc):
                raise StorageThrottledError(THROTTLED_MESSAGE) from exc
            raise

    return call


THROTTLED_MESSAGE = "The database is throttling requests right now; please try again in a few seconds."


class DynamoDBTable:
    """Base of the table stores: the table's name, and a client created lazily (so nothing
    touches AWS at import) unless one is passed (tests, other endpoints)."""

    # How a store waits between its own retries; tests replace it to count the pauses.
    sleep: Callable[[float], None] = staticmethod(time.sleep)

    def __init__(self, table_name: str, client: "DynamoDBClient | None" = None) -> None:
        self.table_name = table_name
        self._client = client

    @property
    def client(self) -> "DynamoDBClient":
        return self._client or dynamodb()


class EventBus:
    """Base of the EventBridge adapters: the bus by name ("default", or an ARN), and a client
    created lazily unless one is passed."""

    def __init__(self, bus_name: str = "default", client: "EventBridgeClient | None" = None) -> None:
        self.bus_name = bus_name
        self._client = client

    @property
    def client(self) -> "EventBridgeClient":
        return self._client or events()
