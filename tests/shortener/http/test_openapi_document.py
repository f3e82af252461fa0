"""The OpenAPI document describes exactly the routes of template.yaml's API events, with the key
they need, and is a valid OpenAPI 3.1 document."""

from typing import Any

import pytest
from openapi_spec_validator import validate

from local_stack.cloudformation import load_template
from shortener.http import openapi
from shortener.http.paging import LINKS_PAGE_SIZE, MAX_LINKS_PAGE_SIZE

_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def template_routes() -> dict[tuple[str, str], bool]:
    """(METHOD, path) of every API event in template.yaml -> whether it needs an API key."""
    routes = {}
    for resource in load_template()["Resources"].values():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in (resource["Properties"].get("Events") or {}).values():
            if event.get("Type") != "Api":
                continue
            properties = event["Properties"]
            public = (properties.get("Auth") or {}).get("Authorizer") == "NONE"
            routes[(properties["Method"].upper(), properties["Path"])] = not public
    return routes


def document_routes(spec: dict[str, Any]) -> dict[tuple[str, str], bool]:
    """(METHOD, path) of every operation in ``spec`` -> whether it names the apiKey scheme."""
    return {
        (method.upper(), path): {openapi.SECURITY_SCHEME: []} in item.get("security", [])
        for path, path_item in spec["paths"].items()
        for method, item in path_item.items()
        if method in _METHODS
    }


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    from functions.api import app

    return openapi.document(app.app)


def test_every_template_route_is_described_and_no_other(spec: dict[str, Any]) -> None:
    # Given the routes that template.yaml gives API Gateway, and those the document describes
    in_template = template_routes()
    described = document_routes(spec)
    # Then they are the same routes, and a route needs a key in one exactly when it does in the other
    assert sorted(described.keys() - in_template.keys()) == [], "described, but not in template.yaml"
    assert sorted(in_template.keys() - described.keys()) == [], "in template.yaml, but not described"
    assert {route for route, keyed in described.items() if keyed} == {
        route for route, keyed in in_template.items() if keyed
    }


def test_the_document_is_valid_openapi_3_1(spec: dict[str, Any]) -> None:
    assert spec["openapi"].startswith("3.1")
    validate(spec)
    scheme = spec["components"]["securitySchemes"][openapi.SECURITY_SCHEME]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "X-Api-Key")


def test_request_bodies_and_errors_come_from_the_models(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    # The body of POST / is ShortenRequest's own schema (the model the route validates with)
    shorten = spec["paths"]["/"]["post"]
    ref = shorten["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/ShortenRequest"
    assert schemas["ShortenRequest"]["required"] == ["url"]
    assert schemas["ShortenRequest"]["properties"]["tags"]["maxItems"] == 10
    # And every error answer of every route is the error body {"error", "message"}
    assert set(schemas["ErrorBody"]["required"]) == {"error", "message"}
    for path, path_item in spec["paths"].items():
        for method, item in path_item.items():
            for status, answer in item["responses"].items():
                if int(status) >= 400 and method != "head":
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status)
            # And every keyed route describes API Gateway's own refusals
            if item.get("security"):
                assert {"403", "429"} <= item["responses"].keys(), (method, path)


def test_query_parameters_come_from_the_query_models(spec: dict[str, Any]) -> None:
    parameters = {p["name"]: p for p in spec["paths"]["/links"]["get"]["parameters"]}
    assert set(parameters) == {"limit", "cursor", "owner", "tag", "q", "job_id", "status", "domain"}
    assert parameters["limit"]["schema"]["maximum"] == MAX_LINKS_PAGE_SIZE
    assert parameters["limit"]["schema"]["default"] == LINKS_PAGE_SIZE
    assert parameters["limit"]["in"] == "query"
