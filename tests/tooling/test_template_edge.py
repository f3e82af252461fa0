"""The edge as template.yaml declares it: a distribution in front of the API's "edge" stage, cached
by path alone, its logs delivered as JSON to EdgeLogGroup; off, the stack is the API alone
(docs/edge.md)."""

from typing import Any

from local_stack.cloudformation.resources import Resources
from local_stack.cloudfront.log_fields import record_fields
from tests.tooling.test_template_clicks import resolved

STAGE = "AWS::ApiGateway::Stage"


def stages(resources: Resources) -> dict[str, dict[str, Any]]:
    return {properties["StageName"]: properties for properties in resources.of_type(STAGE).values()}


def test_the_edge_is_on_by_default_in_front_of_a_stage_of_its_own() -> None:
    # Given the defaults
    resources = resolved()
    # Then the distribution's origin is the API's "edge" stage, with the header it alone sends
    [distribution] = resources.of_type("AWS::CloudFront::Distribution").values()
    [origin] = distribution["DistributionConfig"]["Origins"]
    assert origin["OriginPath"] == "/edge"
    assert [header["HeaderName"] for header in origin["OriginCustomHeaders"]] == ["X-Shortener-Edge"]
    # and that stage logs nothing and caches nothing (the edge's logs count what it answers)
    edge = stages(resources)["edge"]
    assert "AccessLogSetting" not in edge and "CacheClusterEnabled" not in edge


def test_the_edge_stage_answers_only_requests_with_the_edge_header() -> None:
    resources = resolved(EdgeOriginSecret="s3cret")
    acl = resources.properties("EdgeOriginWebAcl")
    assert "Block" in acl["DefaultAction"]
    [rule] = acl["Rules"]
    match = rule["Statement"]["ByteMatchStatement"]
    assert match["FieldToMatch"] == {"SingleHeader": {"Name": "x-shortener-edge"}}
    assert match["SearchString"] == "s3cret"
    [distribution] = resources.of_type("AWS::CloudFront::Distribution").values()
    [origin] = distribution["DistributionConfig"]["Origins"]
    assert origin["OriginCustomHeaders"][0]["HeaderValue"] == "s3cret"


def test_the_cache_key_is_the_path_alone_and_misses_are_not_kept() -> None:
    resources = resolved()
    config = resources.properties("EdgeCachePolicy")["CachePolicyConfig"]
    key = config["ParametersInCacheKeyAndForwardedToOrigin"]
    assert key["HeadersConfig"] == {"HeaderBehavior": "none"}
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
