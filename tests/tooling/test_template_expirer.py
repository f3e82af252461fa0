"""The expirer as template.yaml declares it: scheduled only where the stage has a cache, allowed to
read the expiry index, take a link's expiry keys out, and refresh its own API's cache entries."""

from typing import Any

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.iam.policy import Decision, Request, evaluate
from tests.local_stack.iam.test_template import decide, principal, resources
from tests.tooling.test_template_clicks import resolved


def _rule(stage: str) -> dict[str, Any]:
    return resolved(Stage=stage).properties("ExpirerFunctionSweep")


def test_the_expirer_runs_every_minute_on_the_prod_stage_only() -> None:
    # Given the template on each stage
    # Then the schedule is on where the stage caches redirects, and the function knows that stage
    assert (_rule("prod")["ScheduleExpression"], _rule("prod")["State"]) == ("rate(1 minute)", "ENABLED")
    assert _rule("dev")["State"] == "DISABLED"
    prod = resolved(Stage="prod").properties("ExpirerFunction")["Environment"]["Variables"]
    assert prod["STAGE_URL"].endswith("/prod/")
    assert resolved(Stage="dev").properties("ExpirerFunction")["Environment"]["Variables"]["STAGE_URL"] == ""


def test_the_expirer_may_touch_only_the_expiry_keys_and_its_own_apis_cache() -> None:
    links = resources().resolver.get_att("LinksTable", "Arn")
    # It reads the expiry index, not the table
    assert decide("ExpirerFunction", "dynamodb:Query", f"{links}/index/ByExpiry") == Decision.ALLOW
    assert decide("ExpirerFunction", "dynamodb:Query", f"{links}/index/ByOwner") != Decision.ALLOW
    assert decide("ExpirerFunction", "dynamodb:PutItem", links) != Decision.ALLOW
    assert decide("ExpirerFunction", "dynamodb:DeleteItem", links) != Decision.ALLOW
    # It updates a link only in the index's keys
    policies = principal("ExpirerFunction").policies

    def update(*attributes: str) -> Decision:
        context = {"dynamodb:Attributes": list(attributes)}
        return evaluate(policies, Request("dynamodb:UpdateItem", links, context=context))

    assert update("code", "expiry_pk", "expiry_sk") == Decision.ALLOW
    assert update("code", "url") != Decision.ALLOW
    # And it refreshes the cache entries of its own API's GET methods on its stage, no other
    found = resources()
    api, stage = found.resolver.ref("ShortenerApi"), found.resolver.ref("Stage")
    method = f"arn:aws:execute-api:us-east-1:{ACCOUNT_ID}:{api}/{stage}/GET/abc"
    assert decide("ExpirerFunction", "execute-api:InvalidateCache", method) == Decision.ALLOW
    other_api = method.replace(f":{api}/", ":otherapi/")
    assert decide("ExpirerFunction", "execute-api:InvalidateCache", other_api) != Decision.ALLOW
    assert decide("ExpirerFunction", "execute-api:Invoke", method) != Decision.ALLOW


def test_the_collector_may_count_click_limits_and_refresh_its_own_apis_cache() -> None:
    found = resources()
    links = found.resolver.get_att("LinksTable", "Arn")
    policies = principal("CollectorFunction").policies

    def update(*attributes: str) -> Decision:
        context = {"dynamodb:Attributes": list(attributes)}
        return evaluate(policies, Request("dynamodb:UpdateItem", links, context=context))

    # It adds to a link's served count and uses up its clicks, and touches nothing else of a link
    assert update("code", "served", "max_clicks", "status") == Decision.ALLOW
    all_new = {"dynamodb:Attributes": ["code", "served"], "dynamodb:ReturnValues": ["ALL_NEW"]}
    assert evaluate(policies, Request("dynamodb:UpdateItem", links, context=all_new)) != Decision.ALLOW
    assert update("code", "clicks", "max_clicks", "status") == Decision.ALLOW
    assert update("code", "url") != Decision.ALLOW
    assert decide("CollectorFunction", "dynamodb:PutItem", links) != Decision.ALLOW
    # And refreshes cache entries of its own API only
    api, stage = found.resolver.ref("ShortenerApi"), found.resolver.ref("Stage")
    method = f"arn:aws:execute-api:us-east-1:{ACCOUNT_ID}:{api}/{stage}/GET/abc"
    assert decide("CollectorFunction", "execute-api:InvalidateCache", method) == Decision.ALLOW
    assert (
        decide("CollectorFunction", "execute-api:InvalidateCache", method.replace(f":{api}/", ":x/"))
        != Decision.ALLOW
    )
