"""GET /openapi.json through the API function's handler."""

import json
from types import ModuleType

from tests.support.api import call, response_header
from tests.support.events import api_event


def test_openapi_json_is_served_with_the_callers_base_url(api: ModuleType) -> None:
    # Given a request for the document on the stage's host, without a key
    event = api_event("GET", "/openapi.json")
    # When the function answers it
    answer = call(api, event)
    # Then it is the OpenAPI 3.1 document, whose server is the base that short URLs start with
    assert answer["statusCode"] == 200
    assert response_header(answer, "Content-Type") == "application/json"
    spec = json.loads(answer["body"])
    assert spec["openapi"].startswith("3.1")
    assert spec["servers"] == [{"url": "https://sho.rt/"}]
    assert "/links/{code}" in spec["paths"]
