"""boto3 clients for the embedded AWS (the moto server): fake credentials, one region."""

import functools
import threading
from typing import Any

import boto3
from botocore.config import Config

# moto accepts any credentials; these keep boto3 from looking for real ones.
FAKE_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
# In the User-Agent of the requests Lambda's event source mappings make (awslambda/sqs_sources.py):
# the stack's own, but billed requests on AWS, which the request log (request_log.py) tells apart.
EVENT_SOURCE_USER_AGENT = "local-stack/lambda-event-source-mapping"


def aws_client(service: str, endpoint_url: str, region: str, user_agent_extra: str | None = None) -> Any:
    """A client for ``service`` on the embedded AWS (``user_agent_extra``: appended to its
    User-Agent, to tell its requests apart)."""
    # Clients are made from one session per region: a new session parses botocore's endpoint
    # rules and each service's model again, which the stack's start did for every client it made.
    # botocore's clients are thread-safe, their making from a shared session is not: hence the lock.
    with _making:
        return _session(region).client(
            service,  # type: ignore[call-overload]
            endpoint_url=endpoint_url,
            config=Config(retries={"mode": "standard", "max_attempts": 3}, user_agent_extra=user_agent_extra),
        )


_making = threading.Lock()


@functools.cache
def _session(region: str) -> boto3.session.Session:
    return boto3.session.Session(
        region_name=region,
        aws_access_key_id=FAKE_CREDENTIALS["aws_access_key_id"],
        aws_secret_access_key=FAKE_CREDENTIALS["aws_secret_access_key"],
    )
