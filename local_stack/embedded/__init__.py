"""The embedded AWS: moto's server, in this process, with the middleware the local stack puts in
front of it. The services' own changes to moto live in their packages and are listed, with why each
exists, in ``local_stack.patches`` (PATCHES); this package imports no service's package.

- ``server``: EmbeddedAws, moto's threaded server with its middleware (serialised requests, request
  end hooks, control routes, presigned URL checks, local tools only), and the fixes the server
  itself needs under load (item-level transaction rollback, whole recorder lines, SQS requests
  whose cost does not grow with the backlog).
- ``client``: boto3 clients for it (aws_client, FAKE_CREDENTIALS).
- ``local_only``: no CORS, no moto admin API, for anything but the tools of this machine.
- ``request_log``: moto's request recorder read back, one entry per AWS request."""

from local_stack.embedded.client import FAKE_CREDENTIALS, aws_client
from local_stack.embedded.server import EmbeddedAws

__all__ = ["FAKE_CREDENTIALS", "EmbeddedAws", "aws_client"]
