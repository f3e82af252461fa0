"""The embedded AWS: moto's server, in this process, with what the local stack puts in front of it
and changes in it. Every change to moto is listed, with why it exists, in ``patches`` (PATCHES).

- ``server``: EmbeddedAws, moto's threaded server with its middleware (serialised requests, request
  end hooks, control routes, presigned URL checks, local tools only).
- ``client``: boto3 clients for it (aws_client, FAKE_CREDENTIALS).
- ``local_only``: no CORS, no moto admin API, for anything but the tools of this machine.
- ``request_log``: moto's request recorder read back, one entry per AWS request.
- ``delete_refusals``, ``bucket_policies``, ``lambda_quota``: what AWS refuses (deleting a stack
  whose bucket holds objects, a reservation leaving fewer than 100 executions unreserved) refused
  here too, bucket policies' TLS condition evaluated, and GetAccountSettings answered.
- ``dynamodb_capacity`` and ``dynamodb_throttling``: DynamoDB's on-demand capacity (a model, and
  the middleware inside the serialising lock that charges and throttles requests by it)."""

from local_stack.embedded.client import FAKE_CREDENTIALS, aws_client
from local_stack.embedded.server import EmbeddedAws

__all__ = ["FAKE_CREDENTIALS", "EmbeddedAws", "aws_client"]
