"""API Gateway's access control in the local stack: authorizers (identity sources, cache TTL,
policies), usage plans (token bucket, quota), WAF rate rules and gateway responses."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from local_stack.apigateway.authorizers import (
    EXPLICIT_DENY,
    NO_ALLOW,
    AuthorizerCache,
    Authorizers,
    AuthorizerSpec,
    Grant,
    Refusal,
    authorizers_from_swagger,
    evaluate_policy,
)
from local_stack.apigateway.gateway import routes_from_swagger
from local_stack.apigateway.gateway_responses import GatewayResponses
from local_stack.apigateway.usage_plans import PlanLimits, TokenBucket, UsageMeter, period_start
from local_stack.apigateway.waf import Firewall, RateCounter, WafRequest, WebAcl
from local_stack.awslambda.runtime import Invocation
from tests.support.stack_template import expanded_template

ARN = "arn:aws:execute-api:us-east-1:123456789012:local/local"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeFunction:
    """An authorizer function: answers with ``answer`` (or fails), and counts its invocations."""

    def __init__(self, answer: Any = None, error: dict[str, Any] | None = None) -> None:
        self.answer = answer
        self.error = error
        self.events: list[dict[str, Any]] = []

    def __call__(self, function: str, event: dict[str, Any]) -> Invocation:
        self.events.append(event)
        return Invocation("r", result=self.answer, error=self.error)


def allow(resource: str, **context: Any) -> dict[str, Any]:
    return {
        "principalId": "k1",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resource}],
        },
        "context": context,
        "usageIdentifierKey": "usage-1",
    }


def proxy_event(key: str | None, method: str = "POST", path: str = "/") -> dict[str, Any]:
    return {
        "httpMethod": method,
        "path": path,
        "headers": {"Host": "h", **({"x-api-key": key} if key is not None else {})},
        "queryStringParameters": None,
        "requestContext": {"identity": {"sourceIp": "127.0.0.1"}},
        "body": "{}",
        "isBase64Encoded": False,
    }


def authorizers(function: FakeFunction, clock: Clock, ttl: int = 60) -> Authorizers:
    spec = AuthorizerSpec("keys", "request", "auth-fn", ("method.request.header.X-Api-Key",), ttl)
    return Authorizers({"keys": spec}, function, AuthorizerCache(clock))


# ---- authorizers ------------------------------------------------------------------------------


def test_a_request_without_its_identity_source_is_401_without_calling_the_function() -> None:
    function = FakeFunction(allow(f"{ARN}/*"))
    verdict = authorizers(function, Clock()).authorize("keys", proxy_event(None), f"{ARN}/POST/")
    assert verdict == Refusal("UNAUTHORIZED")
    assert function.events == []


def test_the_function_gets_a_request_event_and_its_context_reaches_the_integration() -> None:
    function = FakeFunction(allow(f"{ARN}/*", owner_id="team-a", admin=True, level=3))
    verdict = authorizers(function, Clock()).authorize("keys", proxy_event("k"), f"{ARN}/POST/")
    assert verdict == Grant(
        {"owner_id": "team-a", "admin": "true", "level": "3", "principalId": "k1"}, "usage-1"
    )
    (event,) = function.events
    assert event["type"] == "REQUEST"
    assert event["methodArn"] == f"{ARN}/POST/"
    assert event["headers"]["x-api-key"] == "k"
    assert "body" not in event


def test_answers_are_cached_per_key_for_the_ttl_and_flushed_on_demand() -> None:
    # Given an authorizer whose answers live 60 s
    clock, function = Clock(), FakeFunction(allow(f"{ARN}/*"))
    guard = authorizers(function, clock, ttl=60)
    # When one key calls twice within the TTL, the function runs once
    for _ in range(2):
        assert isinstance(guard.authorize("keys", proxy_event("k"), f"{ARN}/POST/"), Grant)
    assert len(function.events) == 1
    # And another key is another cache entry
    guard.authorize("keys", proxy_event("other"), f"{ARN}/POST/")
    assert len(function.events) == 2
    # When the TTL passes, the function runs again
    clock.now += 60
    guard.authorize("keys", proxy_event("k"), f"{ARN}/POST/")
    assert len(function.events) == 3
    # And a flush (FlushStageAuthorizersCache) forgets every answer at once
    guard.cache.flush()
    guard.authorize("keys", proxy_event("k"), f"{ARN}/POST/")
    assert len(function.events) == 4


def test_a_ttl_of_zero_calls_the_function_every_time() -> None:
    function = FakeFunction(allow(f"{ARN}/*"))
    guard = authorizers(function, Clock(), ttl=0)
    for _ in range(3):
        guard.authorize("keys", proxy_event("k"), f"{ARN}/POST/")
    assert len(function.events) == 3


def test_a_cached_policy_for_one_method_refuses_the_same_keys_other_methods() -> None:
    # Given an authorizer that (wrongly) allows only the method it was called for
    function = FakeFunction(allow(f"{ARN}/POST/"))
    guard = authorizers(function, Clock())
    assert isinstance(guard.authorize("keys", proxy_event("k"), f"{ARN}/POST/"), Grant)
    # When the same key calls another method within the TTL, the cached policy is evaluated
    verdict = guard.authorize("keys", proxy_event("k", "GET", "/jobs/j1"), f"{ARN}/GET/jobs/j1")
    # Then it is refused, as on API Gateway, without another call to the function
    assert verdict == Refusal("ACCESS_DENIED", NO_ALLOW)
    assert len(function.events) == 1


@pytest.mark.parametrize(
    ("statements", "expected"),
    [
        ([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": [f"{ARN}/*"]}], None),
        ([{"Action": "execute-api:*", "Effect": "Allow", "Resource": f"{ARN}/GET/jobs/*"}], None),
        ([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": f"{ARN}/POST/"}], NO_ALLOW),
        ([{"Action": "execute-api:Invoke", "Effect": "Deny", "Resource": f"{ARN}/*"}], EXPLICIT_DENY),
        (
            [
                {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": f"{ARN}/*"},
                {"Action": "execute-api:Invoke", "Effect": "Deny", "Resource": f"{ARN}/GET/jobs/j?"},
            ],
            EXPLICIT_DENY,
        ),
        ([{"Action": "s3:GetObject", "Effect": "Allow", "Resource": "*"}], NO_ALLOW),
    ],
)
def test_policies_are_evaluated_against_the_method_arn(statements: list[dict], expected: str | None) -> None:
    assert evaluate_policy({"Statement": statements}, f"{ARN}/GET/jobs/j1") == expected


@pytest.mark.parametrize(
    ("error", "answer", "expected"),
    [
        ({"errorMessage": "Unauthorized", "errorType": "Exception"}, None, "UNAUTHORIZED"),
        ({"errorMessage": "boom", "errorType": "KeyError"}, None, "AUTHORIZER_CONFIGURATION_ERROR"),
        (None, {"policyDocument": {"Statement": []}}, "AUTHORIZER_CONFIGURATION_ERROR"),
        (None, {**allow("*"), "context": {"nested": {"no": 1}}}, "AUTHORIZER_CONFIGURATION_ERROR"),
    ],
)
def test_authorizer_failures_are_api_gateways_401_or_500(
    error: dict | None, answer: dict | None, expected: str
) -> None:
    function = FakeFunction(answer, error)
    verdict = authorizers(function, Clock()).authorize("keys", proxy_event("k"), f"{ARN}/POST/")
    assert verdict == Refusal(expected)


def _expanded(**params: str) -> dict[str, Any]:
    expanded, resolver = expanded_template(params, "stk")
    resolver.refs.update({"AuthorizerFunction": "stk-auth", "ApiFunction": "stk-api"})
    for logical_id, name in (("AuthorizerFunction", "stk-auth"), ("ApiFunction", "stk-api")):
        resolver.attributes[logical_id] = {"Arn": f"arn:aws:lambda:us-east-1:1:function:{name}"}
    return dict(resolver.resolve(expanded["Resources"]["ShortenerApi"]["Properties"]["Body"]))


def test_the_templates_authorizers_and_protected_routes_are_read_from_its_swagger() -> None:
    body = _expanded(AuthorizerCacheTtlSeconds="45")
    specs = authorizers_from_swagger(body)
    assert specs["keys"] == AuthorizerSpec(
        "keys", "request", "stk-auth", ("method.request.header.X-Api-Key",), 45
    )
    assert specs["open"] == AuthorizerSpec("open", "request", "stk-auth", (), 0)
    routes = {(route.method, route.resource): route for route in routes_from_swagger(body)}
    for protected in [
        ("POST", "/"),
        ("POST", "/bulk"),
        ("GET", "/jobs/{job_id}"),
        ("GET", "/jobs/{job_id}/results"),
    ]:
        assert (routes[protected].authorizer, routes[protected].api_key_required) == ("keys", True)
    for public in [("GET", "/"), ("GET", "/{code}"), ("GET", "/.well-known/apple-app-site-association")]:
        assert (routes[public].authorizer, routes[public].api_key_required) == (None, False)


def test_access_open_puts_the_open_authorizer_on_the_protected_routes() -> None:
    routes = {(r.method, r.resource): r for r in routes_from_swagger(_expanded(Access="open"))}
    assert routes[("POST", "/")].authorizer == "open"


# ---- usage plans ------------------------------------------------------------------------------


def test_the_token_bucket_allows_the_burst_then_the_rate() -> None:
    bucket = TokenBucket(rate=2, burst=3, tokens=3, updated=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(0.5)  # half a second at 2 per second: one token
    assert not bucket.take(0.5)
    assert [bucket.take(10.0) for _ in range(4)] == [True, True, True, False]  # never above the burst


def test_a_key_is_throttled_then_refilled() -> None:
    clock = Clock()
    meter = UsageMeter(monotonic=clock, utcnow=lambda: datetime(2025, 1, 1, tzinfo=UTC))
    plan = PlanLimits("p", rate=1, burst=2)
    assert [meter.admit("k", plan) for _ in range(3)] == [None, None, "THROTTLED"]
    # Another key has its own bucket
    assert meter.admit("other", plan) is None
    clock.now += 1
    assert meter.admit("k", plan) is None


def test_the_quota_counts_per_utc_day_and_throttled_requests_use_none() -> None:
    clock, today = Clock(), [datetime(2025, 1, 1, 23, 59, tzinfo=UTC)]
    meter = UsageMeter(monotonic=clock, utcnow=lambda: today[0])
    plan = PlanLimits("p", rate=1, burst=1, quota=2, period="DAY")
    assert meter.admit("k", plan) is None
    assert meter.admit("k", plan) == "THROTTLED"  # no token: not counted against the quota
    clock.now += 1
    assert meter.admit("k", plan) is None
    clock.now += 1
    assert meter.admit("k", plan) == "QUOTA_EXCEEDED"
    # At midnight UTC the quota renews
    today[0] = datetime(2025, 1, 2, 0, 0, tzinfo=UTC)
    clock.now += 1
    assert meter.admit("k", plan) is None


def test_quota_periods_start_at_utc_boundaries() -> None:
    moment = datetime(2025, 5, 15, 13, 30, tzinfo=UTC)  # a Thursday
    assert period_start("DAY", moment) == datetime(2025, 5, 15, tzinfo=UTC)
    assert period_start("WEEK", moment) == datetime(2025, 5, 12, tzinfo=UTC)
    assert period_start("MONTH", moment) == datetime(2025, 5, 1, tzinfo=UTC)


def test_plan_limits_come_from_the_api_gateway_shape() -> None:
    plan = {
        "id": "p1",
        "throttle": {"rateLimit": 0.5, "burstLimit": 2},
        "quota": {"limit": 9, "period": "WEEK"},
    }
    assert PlanLimits.from_api(plan) == PlanLimits("p1", 0.5, 2, 9, "WEEK")
    assert PlanLimits.from_api({"id": "p2"}) == PlanLimits("p2")


# ---- WAF ----------------------------------------------------------------------------------------

RATE_RULE_ACL = {
    "DefaultAction": {"Allow": {}},
    "CustomResponseBodies": {
        "slow": {"ContentType": "APPLICATION_JSON", "Content": '{"error": "rate_limited"}'}
    },
    "Rules": [
        {
            "Name": "per-client",
            "Priority": 0,
            "Action": {"Block": {"CustomResponse": {"ResponseCode": 429, "CustomResponseBodyKey": "slow"}}},
            "Statement": {
                "RateBasedStatement": {
                    "AggregateKeyType": "IP",
                    "Limit": 10,
                    "EvaluationWindowSec": 60,
                    "ScopeDownStatement": {
                        "ByteMatchStatement": {
                            "FieldToMatch": {"Method": {}},
                            "PositionalConstraint": "EXACTLY",
                            "SearchString": "POST",
                            "TextTransformations": [{"Priority": 0, "Type": "NONE"}],
                        }
                    },
                }
            },
        }
    ],
}


def waf_request(method: str = "POST", ip: str = "10.0.0.1") -> WafRequest:
    return WafRequest(method, "/", {"Host": "h"}, ip)


def test_a_client_over_the_rate_limit_is_blocked_with_the_custom_response() -> None:
    clock = Clock()
    acl = WebAcl("acl", RATE_RULE_ACL, RateCounter(clock))
    # The first 10 POSTs of a client in the window pass; the 11th is blocked
    assert [acl.inspect(waf_request()) for _ in range(10)] == [None] * 10
    assert acl.inspect(waf_request()) == (
        429,
        [("Content-Type", "application/json")],
        b'{"error": "rate_limited"}',
    )
    # Another client, and GETs (outside the scope-down statement), are not limited
    assert acl.inspect(waf_request(ip="10.0.0.2")) is None
    assert acl.inspect(waf_request("GET")) is None
    # Once the window has passed, the client may send again
    clock.now += 61
    assert acl.inspect(waf_request()) is None


def test_a_block_without_a_custom_response_is_a_403() -> None:
    spec = json.loads(json.dumps(RATE_RULE_ACL))
    spec["Rules"][0]["Action"] = {"Block": {}}
    spec["Rules"][0]["Statement"]["RateBasedStatement"]["Limit"] = 1
    acl = WebAcl("acl", spec)
    acl.inspect(waf_request())
    status, _, body = acl.inspect(waf_request()) or (0, [], b"")
    assert (status, body) == (403, b'{"message":"Forbidden"}')


def test_custom_response_headers_are_sent_as_named() -> None:
    # WAF sends a Block's custom response headers as named; only headers it inserts into allowed
    # requests get the x-amzn-waf- prefix
    block = {"ResponseCode": 429, "CustomResponseBodyKey": "slow"}
    block["ResponseHeaders"] = [{"Name": "X-Content-Type-Options", "Value": "nosniff"}]
    spec = {
        **RATE_RULE_ACL,
        "Rules": [{**RATE_RULE_ACL["Rules"][0], "Action": {"Block": {"CustomResponse": block}}}],
    }
    acl = WebAcl("acl", spec, RateCounter(Clock()))
    for _ in range(10):
        acl.inspect(waf_request())
    _, headers, _ = acl.inspect(waf_request()) or (0, [], b"")
    assert ("X-Content-Type-Options", "nosniff") in headers


def test_every_429_of_the_templates_web_acl_says_nosniff() -> None:
    # Both branches of the rules (Access=open and Access=keys)
    expanded, _ = expanded_template()
    acl = next(r for r in expanded["Resources"].values() if r["Type"] == "AWS::WAFv2::WebACL")
    branches = acl["Properties"]["Rules"]["Fn::If"][1:]
    responses = [rule["Action"]["Block"]["CustomResponse"] for rules in branches for rule in rules]
    assert len(responses) == 3
    for response in responses:
        assert {"Name": "X-Content-Type-Options", "Value": "nosniff"} in response["ResponseHeaders"]


def test_only_web_acls_associated_with_the_api_stage_apply() -> None:
    acls = {"Acl": RATE_RULE_ACL, "Other": RATE_RULE_ACL}
    arns = {"Acl": "arn:acl", "Other": "arn:other"}
    associations = {
        "A": {
            "ResourceArn": "arn:aws:apigateway:us-east-1::/restapis/local/stages/local",
            "WebACLArn": "arn:acl",
        },
        "B": {
            "ResourceArn": "arn:aws:apigateway:us-east-1::/restapis/elsewhere/stages/x",
            "WebACLArn": "arn:other",
        },
        # The edge's stage has its own ACL: it guards that stage only
        "C": {
            "ResourceArn": "arn:aws:apigateway:us-east-1::/restapis/local/stages/edge",
            "WebACLArn": "arn:other",
        },
    }
    firewall = Firewall.for_api(acls, associations, arns, "local", "local")
    assert [acl.name for acl in firewall.acls] == ["Acl"]


# ---- gateway responses ------------------------------------------------------------------------


def test_default_gateway_responses_are_api_gateways_own() -> None:
    status, headers, body = GatewayResponses().render("THROTTLED")
    assert (status, json.loads(body)) == (429, {"message": "Too Many Requests"})
    assert ("x-amzn-ErrorType", "TooManyRequestsException") in headers
    assert GatewayResponses().render("QUOTA_EXCEEDED")[2] == b'{"message":"Limit Exceeded"}'
    assert GatewayResponses().render("AUTHORIZER_CONFIGURATION_ERROR")[:3:2] == (500, b'{"message":null}')


def test_the_apis_gateway_responses_change_status_body_and_headers() -> None:
    responses = GatewayResponses.of_api(
        {
            "x-amazon-apigateway-gateway-responses": {
                "UNAUTHORIZED": {
                    "statusCode": "403",
                    "responseTemplates": {
                        "application/json": '{"error": "missing_api_key", "id": "$context.requestId"}'
                    },
                    "responseParameters": {"gatewayresponse.header.Cache-Control": "'no-store'"},
                },
                "DEFAULT_4XX": {
                    "responseTemplates": {"application/json": '{"error": $context.error.messageString}'}
                },
            }
        }
    )
    status, headers, body = responses.render("UNAUTHORIZED", request_id="r1")
    assert (status, json.loads(body)) == (403, {"error": "missing_api_key", "id": "r1"})
    assert ("Cache-Control", "no-store") in headers
    # A type without its own falls back to DEFAULT_4XX's template, keeping its own status
    status, _, body = responses.render("ACCESS_DENIED", "User is not authorized")
    assert (status, json.loads(body)) == (403, {"error": "User is not authorized"})
    # A GatewayResponse resource wins over the body's entry
    resource = {
        "ResponseType": "UNAUTHORIZED",
        "StatusCode": "401",
        "ResponseTemplates": {"text/plain": "no"},
    }
    status, headers, body = GatewayResponses.of_api({}, [resource]).render("UNAUTHORIZED")
    assert (status, body, headers[0]) == (401, b"no", ("Content-Type", "text/plain"))
