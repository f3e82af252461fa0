"""The one Logger, Metrics and Tracer of a container; their service name comes from
POWERTOOLS_SERVICE_NAME, which the template sets per function.

The Tracer is created on first import of the name (``from shortener.observability import
tracer``), not with this module: the X-Ray SDK builds its own botocore session when it loads, about
200 ms of cold start, which the API function does not pay (its traces come from the platform's
active tracing: API Gateway and Lambda segments)."""

from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

logger = Logger()
metrics = Metrics()
tracer: "Tracer"


@cache
def _tracer() -> "Tracer":
    from aws_lambda_powertools import Tracer

    return Tracer()


def __getattr__(name: str) -> Any:
    if name == "tracer":
        return _tracer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
