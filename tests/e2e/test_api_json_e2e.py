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


def test_three_hundred_json_links_come_back_in_input_order(stack: RunningStack) -> None:
    # Given a custom code already taken by another URL
    taken = stack.post_json("", {"url": "https://example.com/other", "code": "e2e-taken"})
    assert taken.status in (200, 201), taken.text
    # And 300 links: one invalid URL, one asking for the taken code, one repeating an earlier URL
    links: list[dict[str, str]] = [{"url": f"https://example.com/json/{n}"} for n in range(300)]
    links[17] = {"url": "not a url"}
    links[123] = {"url": "https://example.com/json/123", "code": "e2e-taken"}
    links[250] = {"url": "https://example.com/json/40"}
    # When they are sent in one call
    answer = stack.post_json("links/bulk", {"links": links})
    # Then each has its outcome, in input order
    assert answer.status == 200, answer.text
    found = answer.json()["links"]
    assert len(found) == 300
    assert found[17]["status"] in (400, 422) and found[17]["error"] == "invalid_url"
    assert (found[123]["status"], found[123]["error"]) == (409, "code_taken")
    assert found[250]["code"] == found[40]["code"] and found[250]["status"] == 200
    others = [outcome for n, outcome in enumerate(found) if n not in (17, 123, 250)]
    assert {outcome["status"] for outcome in others} == {201}
    assert [outcome["url"] for outcome in others] == [
        f"https://example.com/json/{n}" for n in range(300) if n not in (17, 123, 250)
    ]
    # And a new code redirects to its URL
    followed = stack.request("GET", found[0]["code"], api_key=None)
    assert (followed.status, followed.headers["Location"]) == (301, "https://example.com/json/0")


def test_one_thousand_and_one_json_links_are_413(stack: RunningStack) -> None:
    answer = stack.post_json(
        "links/bulk", {"links": [{"url": f"https://example.com/{n}"} for n in range(1001)]}
    )
    assert answer.status == 413, answer.text
    assert answer.json()["error"] == "payload_too_large"
