"""The audit log: ``GET /audit`` (admins), every change newest first. Included into the API's
resolver by app.py; errors raised here are mapped to JSON there."""

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from request import caller

from shortener.audit.model import AuditPage, AuditQuery
from shortener.exceptions import ServiceUnavailableError
from shortener.http.openapi import Answer, operation
from shortener.services.api import audit_trail

router = APIGatewayRouter()


@router.get(
    "/audit",
    **operation(
        "Every change, newest first (admins)",
        {200: Answer("A page of entries", AuditPage)},
        errors=(400, 403),
        query=AuditQuery,
        tag="audit",
    ),
)
def read_audit() -> Response[str]:
    event = router.current_event
    trail = audit_trail()
    if trail is None:
        raise ServiceUnavailableError("This stack keeps no audit log (it has no audit table).")
    query = {name: event.get_query_string_value(name, None) for name in AuditQuery.model_fields}
    query["from"] = event.get_query_string_value("from", None)
    page = trail.read(caller(event), query)
    return Response(200, content_types.APPLICATION_JSON, page.model_dump_json())
