"""The embedded AWS: moto's server, in this process, with what the local stack puts in front of it
and changes in it. Every change to moto is listed, with why it exists, in ``patches`` (PATCHES).

- ``server``: EmbeddedAws, moto's threaded server with its middleware (serialised requests, request
  end hooks, control routes, presigned URL checks, local tools only).
- ``client``: boto3 clients for it (aws_client, FAKE_CREDENTIALS).
- ``local_only``: no CORS, no moto admin API, for anything but the tools of this machine.
- ``request_log``: moto's request recorder read back, one entry per AWS request."""

from local_stack.embedded.client import FAKE_CREDENTIALS, aws_client
from local_stack.embedded.server import EmbeddedAws

__all__ = ["FAKE_CREDENTIALS", "EmbeddedAws", "aws_client"]
