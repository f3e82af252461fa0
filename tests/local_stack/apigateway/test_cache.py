"""The local stage cache: what the template's stage turns on, entries per cache key for their TTL,
and refreshes only by a SigV4-signed Cache-Control: max-age=0 request (as API Gateway does)."""

from local_stack.apigateway.cache import Answer, CachedMethod, StageCache, invalidation_check, stage_cache
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import Resources
from local_stack.cloudformation.resources import template_resources as named_template_resources
from local_stack.iam import AccessControl, function_principals
from local_stack.stack import LocalStack

SIGNED = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/execute-api/aws4_request, "
    "SignedHeaders=cache-control;host;x-amz-date, Signature=abc"
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Integration:
    """Answers 301 until told otherwise; counts its calls."""

    def __init__(self) -> None:
        self.status = 301
        self.calls = 0

    def __call__(self) -> Answer:
        self.calls += 1
        return self.status, [("Location", "https://example.com/")], b""


def cache_of_codes(clock: Clock) -> StageCache:
    return StageCache([CachedMethod("GET", "/{code}", 300, ("method.request.path.code",))], monotonic=clock)


def get(
    cache: StageCache, code: str, integration: Integration, headers: list[tuple[str, str]] | None = None
) -> int:
    answer = cache.serve(
        "GET",
        "/{code}",
        target=f"/{code}",
        headers=headers or [],
        path_parameters={"code": code},
        fetch=integration,
    )
    return answer[0]


def template_resources(params: dict[str, str], stack_uuid: str | None = None) -> Resources:
    """The template's resources as the local stack names them (nothing created)."""
    return named_template_resources("test", "us-east-1", "http://127.0.0.1:9", params, stack_uuid)


def test_the_prod_stage_of_the_template_caches_redirects_by_code() -> None:
    # Given the template with Stage=prod, Then the stage caches GET /{code}, keyed by the code, for
    # the template's TTL, and nothing else
    cache = LocalStack._stage_cache(template_resources({"Stage": "prod", "Edge": "off"}))
    assert cache is not None
    assert cache.methods == [CachedMethod("GET", "/{code}", 300.0, ("method.request.path.code",))]
    # And with Stage=dev there is no cache
    assert LocalStack._stage_cache(template_resources({})) is None


def test_a_stage_without_a_cache_cluster_caches_nothing() -> None:
    stage = {"CacheClusterEnabled": False, "MethodSettings": [{"ResourcePath": "/*", "HttpMethod": "*"}]}
    assert stage_cache(stage, {"paths": {"/{code}": {"get": {}}}}) is None


def test_a_stage_wide_setting_caches_get_methods_only() -> None:
    stage = {
        "CacheClusterEnabled": True,
        "MethodSettings": [{"ResourcePath": "/*", "HttpMethod": "*", "CachingEnabled": True}],
    }
    body = {"paths": {"/{code}": {"get": {}, "head": {}}, "/": {"post": {}}}}
    cache = stage_cache(stage, body)
    assert cache is not None
    assert [(method.http_method, method.resource) for method in cache.methods] == [("GET", "/{code}")]


def test_entries_are_per_code_and_live_for_the_ttl() -> None:
    clock, integration = Clock(), Integration()
    cache = cache_of_codes(clock)
    assert [get(cache, "abcd", integration), get(cache, "abcd", integration)] == [301, 301]
    assert integration.calls == 1
    get(cache, "efgh", integration)
    assert integration.calls == 2
    # The integration's answer changes; the cache keeps answering the old one until its TTL ends
    integration.status = 410
    clock.now = 299
    assert get(cache, "abcd", integration) == 301
    clock.now = 301
    assert get(cache, "abcd", integration) == 410


def test_only_a_signed_request_refreshes_an_entry() -> None:
    clock, integration = Clock(), Integration()
    cache = cache_of_codes(clock)
    get(cache, "abcd", integration)
    integration.status = 410
    # An unsigned max-age=0 is ignored: anyone could otherwise empty the cache
    assert get(cache, "abcd", integration, [("Cache-Control", "max-age=0")]) == 301
    # A request signed for another service is ignored too
    other = SIGNED.replace("/execute-api/", "/s3/")
    assert get(cache, "abcd", integration, [("Cache-Control", "max-age=0"), ("Authorization", other)]) == 301
    # A SigV4-signed one refreshes the entry, and everyone gets the new answer from then on
    assert get(cache, "abcd", integration, [("Cache-Control", "max-age=0"), ("Authorization", SIGNED)]) == 410
    assert get(cache, "abcd", integration) == 410


def test_gateway_errors_are_not_cached() -> None:
    clock, integration = Clock(), Integration()
    cache = cache_of_codes(clock)
    integration.status = 502
    get(cache, "abcd", integration)
    integration.status = 301
    assert get(cache, "abcd", integration) == 301


def test_methods_the_stage_does_not_cache_go_to_the_integration() -> None:
    clock, integration = Clock(), Integration()
    cache = cache_of_codes(clock)
    for _ in range(2):
        cache.serve(
            "HEAD", "/{code}", target="/abcd", headers=[], path_parameters={"code": "abcd"}, fetch=integration
        )
    assert integration.calls == 2


def test_a_domain_name_becomes_the_base_of_short_urls_and_an_own_host() -> None:
    # Given the template with a custom domain (as the local stack resolves it)
    resources = template_resources({"DomainName": "sho.rt"}, "5f1c0e9a-0000-4000-8000-000000000001")
    environment = resources.functions["ApiFunction"].environment
    # Then short URLs start at the domain's root, the domain is refused as a target, and codes are
    # keyed by the stack id's UUID
    assert environment["PUBLIC_BASE_URL"] == "https://sho.rt"
    assert environment["DOMAIN_NAME"] == "sho.rt"
    assert environment["CODE_KEY"] == "5f1c0e9a-0000-4000-8000-000000000001"
    assert resources.functions["PollerFunction"].environment["DOMAIN_NAME"] == "sho.rt"


def test_with_iam_only_a_role_allowed_execute_api_invalidate_cache_refreshes_an_entry() -> None:
    # Given the prod template's roles enforced, and a cached redirect that changed behind the cache
    resources = template_resources({"Stage": "prod", "Edge": "off"})
    principals = function_principals(resources).by_access_key
    access_control = AccessControl()
    access_control.load(principals)
    keys = {principal.function_name: key for key, principal in principals.items()}
    clock, integration = Clock(), Integration()
    cache = cache_of_codes(clock)
    stage = LocalStack._stage_cache(resources)
    assert stage is not None and stage.stage_name == "prod"
    cache.method_arn_prefix = f"arn:aws:execute-api:us-east-1:{ACCOUNT_ID}:api1234567/{stage.stage_name}/"
    cache.may_invalidate = invalidation_check(access_control, "us-east-1")
    get(cache, "abcd", integration)
    integration.status = 410

    def refresh_signed_by(function: str) -> int:
        signed = SIGNED.replace("AKIDEXAMPLE", keys[resources.physical_id(function)])
        return get(cache, "abcd", integration, [("Cache-Control", "max-age=0"), ("Authorization", signed)])

    # When the poller (no execute-api:InvalidateCache in its role) asks for a fresh answer
    # Then the cached one is served
    assert refresh_signed_by("PollerFunction") == 301
    # While the API function's signed request refreshes the entry
    assert refresh_signed_by("ApiFunction") == 410
    assert get(cache, "abcd", integration) == 410
