"""The fields of the edge's log records, read once from the template's AWS::Logs::Delivery
(RecordFields), so the local edge writes, and the collector reads, exactly what AWS delivers.

Names are CloudFront's own ("Standard logging reference", log file fields,
https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/standard-logs-reference.html);
with output format json, each record is one JSON object keyed by them."""

from collections.abc import Mapping
from typing import Any

from local_stack.cloudformation.template import load_template, resources_of_type

DELIVERY = "AWS::Logs::Delivery"
# The delivery of the distribution's access logs (template.yaml).
EDGE_LOG_DELIVERY = "EdgeLogDelivery"


def record_fields(template: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The edge log record's fields, in the template's order; empty without the edge's delivery."""
    deliveries = resources_of_type(DELIVERY, dict(template) if template is not None else load_template())
    delivery = deliveries.get(EDGE_LOG_DELIVERY)
    if delivery is None:
        return ()
    return tuple(str(field) for field in delivery["Properties"].get("RecordFields", ()))
