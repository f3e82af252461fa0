"""The API that programs build on, end to end on one local stack: the OpenAPI document."""

from tests.e2e.conftest import RunningStack


def test_openapi_document_is_public_and_names_the_stage_url(stack: RunningStack) -> None:
    # Given a running stack
    # When the document is fetched without a key
    answer = stack.request("GET", "openapi.json", api_key=None)
    # Then it is the OpenAPI 3.1 document, with the stage's URL as its server
    assert answer.status == 200, answer.text
    spec = answer.json()
    assert spec["openapi"].startswith("3.1")
    assert spec["servers"] == [{"url": stack.api_url.rstrip("/") + "/"}]
    assert spec["paths"]["/links/{code}"]["patch"]["security"] == [{"apiKey": []}]
