"""The edge as template.yaml declares it: a distribution in front of an HTTP API of its own, cached
by path alone, its logs delivered as JSON to EdgeLogGroup; off, the stack is the API alone
(docs/edge.md)."""

import json
from typing import Any

from local_stack.cloudformation.resources import Resources
from local_stack.cloudfront.log_fields import record_fields
from tests.tooling.test_template_clicks import resolved

CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/brands"

STAGE = "AWS::ApiGateway::Stage"


def stages(resources: Resources) -> dict[str, dict[str, Any]]:
    return {properties["StageName"]: properties for properties in resources.of_type(STAGE).values()}


def test_the_edge_is_on_by_default_in_front_of_an_http_api_of_its_own() -> None:
    # Given the defaults
    resources = resolved()
    # Then the distribution's origin is the HTTP API (payload 1.0, the API function), at its root,
    # with the header it alone sends
    [distribution] = resources.of_type("AWS::CloudFront::Distribution").values()
    [origin] = distribution["DistributionConfig"]["Origins"]
    api_id = resources.resolver.refs["EdgeOriginApi"]
    assert origin["DomainName"].startswith(f"{api_id}.execute-api.")
    assert "OriginPath" not in origin
    assert [header["HeaderName"] for header in origin["OriginCustomHeaders"]] == ["X-Shortener-Edge"]
    integration = resources.properties("EdgeOriginIntegration")
    assert (integration["IntegrationType"], integration["PayloadFormatVersion"]) == ("AWS_PROXY", "1.0")
    # and its stage logs nothing (the edge's logs count what it answers); the REST API has no
    # second stage and no origin web ACL any more
    [stage] = resources.of_type("AWS::ApiGatewayV2::Stage").values()
    assert "AccessLogSettings" not in stage
    assert "edge" not in stages(resources)
    assert "EdgeOriginWebAcl" not in resources.of_type("AWS::WAFv2::WebACL")


def test_the_origin_routes_only_what_the_edge_sends_it() -> None:
    routes = {r["RouteKey"] for r in resolved().of_type("AWS::ApiGatewayV2::Route").values()}
    assert routes == {
        "GET /{code}",
        "HEAD /{code}",
        "POST /{code}",
        "GET /",
        "POST /",
        "GET /apple-app-site-association",
        "GET /.well-known/apple-app-site-association",
    }


def test_the_function_checks_the_edge_header_with_the_distributions_value() -> None:
    resources = resolved(EdgeOriginSecret="s3cret")
    [distribution] = resources.of_type("AWS::CloudFront::Distribution").values()
    [origin] = distribution["DistributionConfig"]["Origins"]
    assert origin["OriginCustomHeaders"][0]["HeaderValue"] == "s3cret"
    variables = resources.properties("ApiFunction")["Environment"]["Variables"]
    assert variables["EDGE_ORIGIN_SECRET"] == "s3cret"


def test_the_cache_key_is_the_path_alone_and_misses_are_not_kept() -> None:
    resources = resolved()
    config = resources.properties("EdgeCachePolicy")["CachePolicyConfig"]
    key = config["ParametersInCacheKeyAndForwardedToOrigin"]
    assert key["HeadersConfig"] == {"HeaderBehavior": "none"}
    # A stack of one domain runs no viewer function (it would cost $0.10 per million requests)
    behaviour = resources.of_type("AWS::CloudFront::Distribution")["EdgeDistribution"]["DistributionConfig"][
        "DefaultCacheBehavior"
    ]
    assert "FunctionAssociations" not in behaviour
    assert not resources.of_type("AWS::CloudFront::Function")
    assert key["CookiesConfig"] == {"CookieBehavior": "none"}
    assert key["QueryStringsConfig"] == {"QueryStringBehavior": "none"}
    # Only answers that say how long they may be kept are kept
    assert config["DefaultTTL"] == 0
    [distribution] = resources.of_type("AWS::CloudFront::Distribution").values()
    errors = {
        e["ErrorCode"]: e["ErrorCachingMinTTL"]
        for e in distribution["DistributionConfig"]["CustomErrorResponses"]
    }
    assert errors[404] == 0


def test_with_several_domains_the_viewers_host_is_in_the_cache_key() -> None:
    resources = resolved(Domains="go.example,shop.example", EdgeCertificateArn=CERTIFICATE)
    key = resources.properties("EdgeCachePolicy")["CachePolicyConfig"][
        "ParametersInCacheKeyAndForwardedToOrigin"
    ]
    # The viewer's host as the viewer-request function copies it: a link answers on its own
    # domain only, so one domain's redirect must never answer another's request
    assert key["HeadersConfig"] == {"HeaderBehavior": "whitelist", "Headers": ["X-Shortener-Host"]}
    config = resources.of_type("AWS::CloudFront::Distribution")["EdgeDistribution"]["DistributionConfig"]
    [association] = config["DefaultCacheBehavior"]["FunctionAssociations"]
    assert association["EventType"] == "viewer-request"
    code = resources.properties("EdgeViewerHost")["FunctionCode"]
    assert "x-shortener-host" in code and "request.headers.host" in code
    # The distribution answers every domain, with the certificate that names them
    assert config["Aliases"] == ["go.example", "shop.example"]
    assert config["ViewerCertificate"]["AcmCertificateArn"] == CERTIFICATE


# What docs/domains.md says is left of the API function's 4 KB of environment variables for the
# app-site association documents, and what AWS's longer generated names add to the local ones
# (a 14-character suffix on each table and queue name, a longer queue endpoint).
DOCUMENTS_BUDGET = 2_000
AWS_NAMES_MARGIN = 400


def test_the_api_functions_variables_leave_the_documented_room_for_app_site_associations() -> None:
    # Given two domains, each with its own document of DOCUMENTS_BUDGET bytes between them
    document = {"applinks": {"details": [{"appIDs": ["x" * 935]}]}}
    documents = json.dumps({"go.example": document, "shop.example": document})
    assert len(documents) <= DOCUMENTS_BUDGET
    resources = resolved(
        Domains="go.example,shop.example",
        EdgeCertificateArn=CERTIFICATE,
        DomainAppleAppSiteAssociations=documents,
    )
    variables = resources.properties("ApiFunction")["Environment"]["Variables"]
    # Then they all fit Lambda's 4 KB (keys and values) with room for AWS's longer names
    size = sum(len(str(key)) + len(str(value)) for key, value in variables.items())
    assert size + AWS_NAMES_MARGIN <= 4096, size


def test_the_origin_hears_the_viewer_headers_the_redirect_needs() -> None:
    headers = resolved().properties("EdgeOriginRequestPolicy")["OriginRequestPolicyConfig"]["HeadersConfig"]
    assert set(headers["Headers"]) >= {
        "CloudFront-Viewer-Country",
        "CloudFront-Is-IOS-Viewer",
        "CloudFront-Is-Android-Viewer",
        "CloudFront-Is-Mobile-Viewer",
        "CloudFront-Is-Desktop-Viewer",
        "User-Agent",
        "Referer",
        "Accept",
    }


def test_the_origin_hears_the_query_which_is_no_part_of_the_cache_key() -> None:
    # A link with forward_query passes it on; its answer is never cached (private, no-store)
    resources = resolved()
    request_policy = resources.properties("EdgeOriginRequestPolicy")["OriginRequestPolicyConfig"]
    assert request_policy["QueryStringsConfig"] == {"QueryStringBehavior": "all"}
    cache_policy = resources.properties("EdgeCachePolicy")["CachePolicyConfig"]
    key = cache_policy["ParametersInCacheKeyAndForwardedToOrigin"]["QueryStringsConfig"]
    assert key == {"QueryStringBehavior": "none"}


def test_the_edge_logs_go_as_json_to_a_vended_log_group() -> None:
    resources = resolved()
    group = resources.properties("EdgeLogGroup")["LogGroupName"]
    assert group.startswith("/aws/vendedlogs/")
    assert resources.properties("EdgeLogDestination")["OutputFormat"] == "json"
    assert resources.properties("EdgeLogSource")["LogType"] == "ACCESS_LOGS"
    fields = record_fields()
    assert {
        "timestamp(ms)",
        "cs-uri-stem",
        "sc-status",
        "cs(Referer)",
        "x-edge-result-type",
        "c-country",
    } <= set(fields)
    assert resources.properties("EdgeLogDelivery")["RecordFields"] == list(fields)


def test_off_the_stack_is_the_api_alone_with_its_stage_cache_in_prod() -> None:
    resources = resolved(Edge="off", Stage="prod")
    assert not resources.of_type("AWS::CloudFront::Distribution")
    assert list(stages(resources)) == ["prod"]
    assert stages(resources)["prod"]["CacheClusterEnabled"] is True


def test_behind_the_edge_the_prod_stage_has_no_cache() -> None:
    assert stages(resolved(Stage="prod"))["prod"]["CacheClusterEnabled"] is False
    assert (
        resolved(Stage="prod").properties("ApiFunction")["Environment"]["Variables"]["API_CACHE_ENABLED"]
        == "false"
    )
