"""The clicks capture path as template.yaml declares it: the stage's access log (JSON, the client's
address in it, its own retention) -> a subscription filter -> the collector; the redirect route is
left as it was (docs/clicks.md)."""

import json
from typing import Any

from local_stack.cloudformation.intrinsics import Resolver
from local_stack.cloudformation.intrinsics import parameter_values as local_parameter_values
from local_stack.cloudformation.resources import Resources, name_resources
from local_stack.cloudformation.template import expand_sam, load_template


def resolved(**given: str) -> Resources:
    expanded = expand_sam(load_template(), "clk", "us-east-1", given)
    resolver = Resolver(
        parameters=local_parameter_values(expanded["Parameters"], given),
        region="us-east-1",
        stack_name="clk",
        conditions=expanded.get("Conditions", {}),
    )
    return name_resources(expanded, resolver, "http://127.0.0.1:9", "us-east-1")


def stage(resources: Resources) -> dict[str, Any]:
    # The API's own stage: the edge's stage ("edge") logs nothing (tests/tooling/test_template_edge.py).
    [properties] = [
        properties
        for properties in resources.of_type("AWS::ApiGateway::Stage").values()
        if properties["StageName"] != "edge"
    ]
    return properties


def test_the_stage_logs_every_request_as_json_to_a_log_group_that_expires() -> None:
    resources = resolved(AccessLogRetentionDays="30")
    setting = stage(resources)["AccessLogSetting"]
    group = resources.properties("ApiAccessLogGroup")
    assert setting["DestinationArn"] == resources.resolver.get_att("ApiAccessLogGroup", "Arn")
    assert group["RetentionInDays"] == "30"
    # The format is one JSON object of $context variables; the client's address is in it (abuse
    # tracing), so is what the collector needs, and API Gateway's required request id
    fields = json.loads(setting["Format"])
    assert fields["ip"] == "$context.identity.sourceIp"
    assert fields["requestId"] == "$context.requestId"
    assert {"time", "method", "resourcePath", "path", "status", "userAgent"} <= set(fields)
    # No header other than the user agent exists as a $context variable: no referrer field
    assert not any("referer" in value.lower() or "referrer" in value.lower() for value in fields.values())


def test_the_access_log_is_subscribed_by_the_collector_for_redirects_only() -> None:
    resources = resolved(Edge="off")
    subscription = resources.of_type("AWS::Logs::SubscriptionFilter")["CollectorFunctionAccessLog"]
    assert subscription["LogGroupName"] == resources.physical_id("ApiAccessLogGroup")
    assert subscription["DestinationArn"] == resources.resolver.get_att("CollectorFunction", "Arn")
    assert subscription["FilterPattern"] == '{ $.resourcePath = "/{code}" }'
    # CloudWatch Logs may invoke it (the permission is scoped to the log group)
    permissions = resources.of_type("AWS::Lambda::Permission").values()
    sources = {p["SourceArn"] for p in permissions if p["Principal"] == "logs.amazonaws.com"}
    assert resources.resolver.get_att("ApiAccessLogGroup", "Arn") in sources


def test_the_api_functions_destination_lines_are_subscribed_by_the_collector() -> None:
    resources = resolved(Edge="off")
    filters = resources.of_type("AWS::Logs::SubscriptionFilter")
    assert set(filters) == {"CollectorFunctionAccessLog", "CollectorFunctionDestinations"}
    subscription = filters["CollectorFunctionDestinations"]
    assert subscription["LogGroupName"] == resources.physical_id("ApiFunctionLogGroup")
    assert subscription["DestinationArn"] == resources.resolver.get_att("CollectorFunction", "Arn")
    assert subscription["FilterPattern"] == '{ $.record = "destination" }'
    permissions = resources.of_type("AWS::Lambda::Permission").values()
    sources = [p["SourceArn"] for p in permissions if p["Principal"] == "logs.amazonaws.com"]
    assert sources.count(resources.resolver.get_att("ApiFunctionLogGroup", "Arn")) == 1


def test_the_access_log_names_the_stage_so_the_edge_stage_is_never_counted_from_it() -> None:
    fields = json.loads(stage(resolved())["AccessLogSetting"]["Format"])
    assert fields["stage"] == "$context.stage"


def test_the_edges_logs_are_subscribed_by_the_collector_where_the_edge_is_on() -> None:
    resources = resolved()
    filters = resources.of_type("AWS::Logs::SubscriptionFilter")
    edge = filters["EdgeClicksSubscription"]
    assert edge["LogGroupName"] == resources.physical_id("EdgeLogGroup")
    assert edge["DestinationArn"] == resources.resolver.get_att("CollectorFunction", "Arn")
    # Every record: the collector keeps the redirects
    assert edge["FilterPattern"] == ""
    permission = resources.properties("EdgeClicksPermission")
    assert permission["Principal"] == "logs.amazonaws.com"
    assert permission["SourceArn"] == resources.resolver.get_att("EdgeLogGroup", "Arn")
    # Edge=off: neither the log group nor its subscription
    off = resolved(Edge="off")
    assert "EdgeClicksSubscription" not in off.of_type("AWS::Logs::SubscriptionFilter")
    assert "EdgeLogGroup" not in off.of_type("AWS::Logs::LogGroup")


def test_the_collector_writes_only_the_clicks_table_and_hourly_counts_expire() -> None:
    resources = resolved(ClickRetentionDays="30")
    collector = resources.properties("CollectorFunction")
    variables = collector["Environment"]["Variables"]
    assert variables["CLICKS_TABLE"] == resources.physical_id("ClicksTable")
    assert variables["CLICK_RETENTION_DAYS"] == "30"
    table = resources.properties("ClicksTable")
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_the_api_reads_the_clicks_table_and_never_puts_or_deletes() -> None:
    from local_stack.iam.policy import Decision
    from tests.local_stack.iam.test_template import decide, resources

    clicks = resources().resolver.get_att("ClicksTable", "Arn")
    assert decide("ApiFunction", "dynamodb:Query", clicks) == Decision.ALLOW
    assert decide("ApiFunction", "dynamodb:DeleteItem", clicks) != Decision.ALLOW
    assert decide("ApiFunction", "dynamodb:PutItem", clicks) != Decision.ALLOW


def test_the_logging_role_is_the_stacks_only_when_asked_and_outlives_it() -> None:
    template = load_template()["Resources"]
    assert template["ApiGatewayAccount"]["DeletionPolicy"] == "Retain"
    assert template["ApiGatewayLoggingRoleResource"]["DeletionPolicy"] == "Retain"
    assert "ApiGatewayAccount" in resolved().of_type("AWS::ApiGateway::Account")
    existing = resolved(ApiGatewayLoggingRole="existing")
    assert existing.of_type("AWS::ApiGateway::Account") == {}
    assert stage(existing)["Tags"] == [{"Key": "access-log-role", "Value": "existing"}]


def test_the_collector_may_write_counters_and_nothing_else() -> None:
    from local_stack.iam.policy import Decision
    from tests.local_stack.iam.test_template import decide, resources

    clicks = resources().resolver.get_att("ClicksTable", "Arn")
    links = resources().resolver.get_att("LinksTable", "Arn")
    assert decide("CollectorFunction", "dynamodb:UpdateItem", clicks) == Decision.ALLOW
    assert decide("CollectorFunction", "dynamodb:PutItem", clicks) == Decision.ALLOW
    assert decide("CollectorFunction", "dynamodb:DeleteItem", clicks) != Decision.ALLOW
    assert decide("CollectorFunction", "dynamodb:BatchGetItem", links) == Decision.ALLOW
    assert decide("CollectorFunction", "dynamodb:PutItem", links) != Decision.ALLOW


def test_the_edge_origin_has_no_api_cache_so_the_function_spends_click_limits() -> None:
    # Every redirect of a click-limited link through the edge must reach the function (the edge
    # stores none: no-store), which spends the limit once (tests/shortener/clicks/test_edge_limits.py);
    # an API cache at the origin would answer some without it. The origin is an HTTP API, which has
    # no cache at all, integrated straight with the function.
    for given in ({}, {"Stage": "prod"}):
        resources = resolved(**given)
        [stage] = resources.of_type("AWS::ApiGatewayV2::Stage").values()
        assert not any("cach" in key.lower() for key in stage)
        [integration] = resources.of_type("AWS::ApiGatewayV2::Integration").values()
        assert integration["IntegrationType"] == "AWS_PROXY"
        assert "edge" not in {
            s.get("StageName") for s in resources.of_type("AWS::ApiGateway::Stage").values()
        }
