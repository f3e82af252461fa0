"""The one Logger, Metrics and Tracer of a container; their service name comes from
POWERTOOLS_SERVICE_NAME, which the template sets per function."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()
