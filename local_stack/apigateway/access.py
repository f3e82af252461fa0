"""What API Gateway checks before it calls an integration, in its order: AWS WAF (web ACLs on the
stage), then the route, then the method's Lambda authorizer, then the API key and its usage plan
(AWS: "Control and manage access to REST APIs in API Gateway"; "Choose an API key source").
Refusals are API Gateway's own answers, rendered with the API's gateway responses."""

import logging
from collections.abc import Mapping
from typing import Any

from local_stack.apigateway.authorizers import (
    Authorizers,
    Grant,
    Refusal,
    authorizers_from_swagger,
    method_arn,
)
from local_stack.apigateway.gateway_responses import GatewayAnswer, GatewayResponses
from local_stack.apigateway.routes import INTEGRATION_TIMEOUT_SECONDS, STAGE, HttpRequest, Route
from local_stack.apigateway.usage_plans import KeyDirectory, UsagePlans
from local_stack.apigateway.waf import Firewall, WafRequest
from local_stack.awslambda.runtime import FunctionThrottledError, Invocation, LambdaRuntime
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import REST_API, WEB_ACL, WEB_ACL_ASSOCIATION, Resources

log = logging.getLogger(__name__)

GATEWAY_RESPONSE = "AWS::ApiGateway::GatewayResponse"


class ApiAccess:
    """Access control of one REST API: firewall, authorizers, usage plans, gateway responses."""

    def __init__(
        self,
        *,
        region: str,
        api_id: str,
        authorizers: Authorizers,
        responses: GatewayResponses,
        usage_plans: UsagePlans | None = None,
        firewall: Firewall | None = None,
        api_key_source: str = "HEADER",
    ) -> None:
        self.region = region
        self.api_id = api_id
        self.authorizers = authorizers
        self.responses = responses
        self.usage_plans = usage_plans
        self.firewall = firewall or Firewall([])
        self.api_key_source = api_key_source

    @classmethod
    def of_stack(
        cls, resources: Resources, runtime: LambdaRuntime, api_logical_id: str, directory: KeyDirectory | None
    ) -> "ApiAccess":
        """The access control the template declares for the RestApi ``api_logical_id``."""
        properties = resources.of_type(REST_API)[api_logical_id]
        body = properties.get("Body", {})
        api_id = resources.physical_id(api_logical_id)
        gateway_responses = [
            props
            for props in resources.of_type(GATEWAY_RESPONSE).values()
            if props.get("RestApiId") == api_id
        ]
        web_acls = resources.of_type(WEB_ACL)
        return cls(
            region=resources.region,
            api_id=api_id,
            authorizers=Authorizers(authorizers_from_swagger(body), _invoker(runtime)),
            responses=GatewayResponses.of_api(body, gateway_responses),
            usage_plans=UsagePlans(directory) if directory is not None else None,
            firewall=Firewall.for_api(
                web_acls,
                resources.of_type(WEB_ACL_ASSOCIATION),
                {logical_id: resources.resolver.get_att(logical_id, "Arn") for logical_id in web_acls},
                api_id,
                STAGE,
            ),
            api_key_source=str(
                properties.get("ApiKeySourceType")
                or body.get("x-amazon-apigateway-api-key-source")
                or "HEADER"
            ),
        )

    @property
    def authorizer_functions(self) -> set[str]:
        return {spec.function for spec in self.authorizers.specs.values()}

    def screen(self, request: HttpRequest) -> GatewayAnswer | None:
        """WAF's answer to a request it blocks, before anything else sees the request."""
        headers: dict[str, str] = {}
        for key, value in request.headers:
            headers.setdefault(key, value)
        return self.firewall.inspect(WafRequest(request.method, request.target, headers, request.source_ip))

    def admit(self, route: Route, event: dict[str, Any]) -> GatewayAnswer | None:
        """None when the route's authorizer and usage plan let the request through (the event then
        carries the authorizer's context and the API key), else API Gateway's refusal."""
        usage_identifier: str | None = None
        context = event["requestContext"]
        if route.authorizer is not None:
            arn = method_arn(
                self.region, ACCOUNT_ID, self.api_id, STAGE, method=event["httpMethod"], path=event["path"]
            )
            verdict = self.authorizers.authorize(route.authorizer, event, arn)
            if isinstance(verdict, Refusal):
                if verdict.context is not None:
                    context["authorizer"] = verdict.context
                return self.refuse(verdict.response_type, verdict.message, event)
            assert isinstance(verdict, Grant)
            context["authorizer"] = verdict.context
            usage_identifier = verdict.usage_identifier
        if route.api_key_required and self.usage_plans is not None:
            api_key = usage_identifier if self.api_key_source == "AUTHORIZER" else _header(event, "x-api-key")
            refusal, info = self.usage_plans.admit(api_key)
            if refusal is not None:
                return self.refuse(refusal, None, event)
            assert info is not None
            context.setdefault("identity", {}).update({"apiKey": api_key, "apiKeyId": info.key_id})
        return None

    def no_route(self, request: HttpRequest) -> GatewayAnswer:
        """MISSING_AUTHENTICATION_TOKEN: a method and path that no route matches (the template's
        gateway response for it, else API Gateway's 403)."""
        return self.responses.render("MISSING_AUTHENTICATION_TOKEN", request_headers=dict(request.headers))

    def refuse(self, response_type: str, message: str | None, event: Mapping[str, Any]) -> GatewayAnswer:
        """API Gateway's own answer of type ``response_type``."""
        return self.responses.render(
            response_type,
            message,
            request_id=str(event.get("requestContext", {}).get("requestId", "")),
            request_headers=event.get("headers") or {},
            authorizer=event.get("requestContext", {}).get("authorizer"),
        )

    def flush_authorizer_cache(self) -> None:
        """FlushStageAuthorizersCache."""
        self.authorizers.cache.flush()
        log.info("Authorizer cache of stage %s flushed", STAGE)


def _invoker(runtime: LambdaRuntime) -> Any:
    def invoke(function: str, event: dict[str, Any]) -> Invocation:
        # An authorizer that is not running, or throttled, is API Gateway failing to reach it.
        if runtime.function(function) is None:
            return Invocation("", error={"errorType": "ResourceNotFound", "errorMessage": function})
        try:
            # Waits for a busy authorizer as for a busy integration: on AWS the account's
            # concurrency would run it at once (a burst of new keys all miss the cache).
            return runtime.invoke(function, event, slot_timeout=INTEGRATION_TIMEOUT_SECONDS)
        except FunctionThrottledError:
            return Invocation("", error={"errorType": "TooManyRequestsException", "errorMessage": function})

    return invoke


def _header(event: Mapping[str, Any], name: str) -> str | None:
    headers = event.get("headers") or {}
    return next((str(value) for key, value in headers.items() if key.lower() == name), None)
