"""API Gateway's side of the keys: each key's API key (its usage identifier) in the stack's usage
plan, and the stage's authorizer cache. Used by `shortener keys` with the operator's credentials
(apigateway:POST/GET/PATCH on /apikeys and /usageplans, apigateway:DELETE on the stage's
/cache/authorizers), never by the functions."""

from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from shortener.exceptions import UsagePlanError

if TYPE_CHECKING:
    from mypy_boto3_apigateway import APIGatewayClient
else:
    APIGatewayClient = Any


class ApiGatewayUsagePlan:
    """One usage plan and the API stage it meters."""

    def __init__(self, client: "APIGatewayClient", usage_plan_id: str, rest_api_id: str, stage: str) -> None:
        self.client = client
        self.usage_plan_id = usage_plan_id
        self.rest_api_id = rest_api_id
        self.stage = stage

    def add_key(self, name: str, usage_key: str) -> None:
        """Create an enabled API key with the value ``usage_key`` and add it to the plan."""
        try:
            created = self.client.create_api_key(
                name=name,
                value=usage_key,
                enabled=True,
                description="Usage identifier of a shortener API key (not a credential)",
            )
            self.client.create_usage_plan_key(
                usagePlanId=self.usage_plan_id, keyId=created["id"], keyType="API_KEY"
            )
        except (BotoCoreError, ClientError) as exc:
            raise UsagePlanError(f"API Gateway refused the key's usage plan entry: {exc}") from exc

    def has_key(self, usage_key: str) -> bool:
        """Whether an enabled API key with this value is in the plan."""
        found = self._api_key(None, usage_key)
        if found is None or not found.get("enabled"):
            return False
        plans = self.client.get_usage_plans(keyId=found["id"]).get("items", [])
        return any(plan.get("id") == self.usage_plan_id for plan in plans)

    def disable_key(self, name: str, usage_key: str) -> None:
        """Disable the API key (usage is no longer metered to it; API Gateway refuses it)."""
        found = self._api_key(name, usage_key)
        if found is None:
            return
        try:
            self.client.update_api_key(
                apiKey=found["id"], patchOperations=[{"op": "replace", "path": "/enabled", "value": "false"}]
            )
        except (BotoCoreError, ClientError) as exc:
            raise UsagePlanError(f"API Gateway did not disable the key's usage plan entry: {exc}") from exc

    def flush_authorizer_cache(self) -> None:
        """Drop every cached authorizer answer of the stage (FlushStageAuthorizersCache)."""
        try:
            self.client.flush_stage_authorizers_cache(restApiId=self.rest_api_id, stageName=self.stage)
        except (BotoCoreError, ClientError) as exc:
            raise UsagePlanError(
                f"The key is revoked, but API Gateway did not flush its authorizer cache ({exc}); "
                "cached answers may still allow the key until the cache TTL passes."
            ) from exc

    def _api_key(self, name: str | None, usage_key: str) -> dict[str, Any] | None:
        """The API key whose value is ``usage_key`` (found by name when given: API keys are ids to
        API Gateway, and a local stack's ids change when it restarts)."""
        arguments: dict[str, Any] = {"includeValues": True, "limit": 500}
        if name:
            arguments["nameQuery"] = name
        paginator = self.client.get_paginator("get_api_keys")
        for page in paginator.paginate(**arguments):
            for item in page.get("items", []):
                if item.get("value") == usage_key:
                    return dict(item)
        return None
