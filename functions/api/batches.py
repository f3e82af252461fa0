"""Changes in bulk: ``POST /links/batch`` (disable, enable, delete or set the fields of every link
a selector matches) and ``GET /links/batch/{batch_id}``. Included into the API's resolver by
app.py; errors raised here are mapped to JSON there. The rules live in shortener.jobs.batches."""

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from request import api_url, audit, body_fields, caller, stage_base_url

from shortener.http import web
from shortener.http.openapi import Answer, link_to, operation
from shortener.jobs.batches_model import BatchAccepted, BatchRequest, BatchStatusQuery, BatchView
from shortener.services.api import api_batches

router = APIGatewayRouter()
# The most codes of a batch its audit entry lists.
AUDITED_CODES = 100


@router.post(
    "/links/batch",
    **operation(
        "Disable, enable, delete or change every link of a list of codes, a job or a tag",
        {
            202: Answer(
                "Accepted: the batch runs in the background",
                BatchAccepted,
                links={
                    "GetBatch": link_to("GET", "/links/batch/{batch_id}", batch_id="$response.body#/batch_id")
                },
            )
        },
        errors=(404, 409),
        body=BatchRequest,
    ),
)
def start_batch() -> Response[str]:
    event = router.current_event
    request = web.parse_request(BatchRequest, body_fields(event))
    batch = api_batches().submit(caller(event), request, stage_base_url=stage_base_url(event))
    audit(event, "links.batch", batch.batch_id, after=_asked(request))
    status_url = api_url(event) + f"links/batch/{batch.batch_id}"
    accepted = BatchAccepted(batch_id=batch.batch_id, status_url=status_url)
    return Response(
        202, content_types.APPLICATION_JSON, accepted.model_dump_json(), headers={"Location": status_url}
    )


def _asked(request: BatchRequest) -> dict[str, object]:
    """What a batch asked, as the audit log keeps it: a long list of codes by its length and first
    hundred (an entry stays far below DynamoDB's 400 KB item)."""
    asked = request.model_dump(mode="json", exclude_none=True)
    codes = asked.pop("codes", None)
    if codes is not None:
        asked |= {"codes_count": len(codes), "codes": codes[:AUDITED_CODES]}
    return asked


@router.get(
    "/links/batch/<batch_id>",
    **operation(
        "A batch's counts and its outcomes, a page at a time",
        {200: Answer("The batch", BatchView)},
        errors=(404,),
        query=BatchStatusQuery,
    ),
)
def show_batch(batch_id: str) -> Response[str]:
    event = router.current_event
    view = api_batches().status(caller(event), batch_id, event.get_query_string_value("cursor", None))
    return Response(200, content_types.APPLICATION_JSON, view.model_dump_json())
