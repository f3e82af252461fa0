"""API Gateway's CloudFormation types that moto's CloudFormation lacks, created in moto's API Gateway:
Stage, Account, UsagePlan, ApiKey, UsagePlanKey, the WAF web ACLs associated with stages, and the
HTTP API (v2) that is the edge's origin: its Api, Integration, Route and Stage.

Usage plans and keys are where `shortener keys` adds keys as on AWS and the local usage plans
(usage_plans.py) read them. moto makes up the plans' and keys' ids, which become their Ref: a
UsagePlanKey names both."""

import uuid
from typing import Any

from local_stack.resource_provider import Created


def _backend(account_id: str, region: str) -> Any:
    from moto.apigateway.models import apigateway_backends

    return apigateway_backends[account_id][region]


class UsagePlanProvider:
    TYPE, NAME_PROPERTY = "AWS::ApiGateway::UsagePlan", "UsagePlanName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        payload: dict[str, Any] = {"name": str(properties.get("UsagePlanName", name))}
        if "Description" in properties:
            payload["description"] = properties["Description"]
        if properties.get("ApiStages"):
            payload["apiStages"] = [
                {"apiId": str(stage["ApiId"]), "stage": str(stage["Stage"])}
                for stage in properties["ApiStages"]
            ]
        throttle = properties.get("Throttle") or {}
        if throttle:
            payload["throttle"] = {
                key: (float if key == "rateLimit" else int)(float(throttle[prop]))
                for key, prop in (("rateLimit", "RateLimit"), ("burstLimit", "BurstLimit"))
                if prop in throttle
            }
        quota = properties.get("Quota") or {}
        if quota:
            payload["quota"] = {"limit": int(quota["Limit"]), "period": str(quota.get("Period", "DAY"))}
        return Created(_backend(account_id, region).create_usage_plan(payload).id)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        _backend(account_id, region).delete_usage_plan(created.physical_id)


class ApiKeyProvider:
    TYPE, NAME_PROPERTY = "AWS::ApiGateway::ApiKey", "Name"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        payload: dict[str, Any] = {
            "name": str(properties.get("Name", name)),
            "enabled": str(properties.get("Enabled", False)).lower() == "true",
        }
        for key, prop in (("value", "Value"), ("description", "Description")):
            if prop in properties:
                payload[key] = str(properties[prop])
        return Created(_backend(account_id, region).create_api_key(payload).id)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        _backend(account_id, region).delete_api_key(created.physical_id)


class UsagePlanKeyProvider:
    TYPE, NAME_PROPERTY = "AWS::ApiGateway::UsagePlanKey", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        plan_id, key_id = str(properties["UsagePlanId"]), str(properties["KeyId"])
        _backend(account_id, region).create_usage_plan_key(
            plan_id, {"keyId": key_id, "keyType": properties.get("KeyType", "API_KEY")}
        )
        return Created(key_id, owner=plan_id)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        _backend(account_id, region).delete_usage_plan_key(created.owner, created.physical_id)


class StageProvider:
    TYPE, NAME_PROPERTY = "AWS::ApiGateway::Stage", "StageName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        api_id, stage_name = properties["RestApiId"], properties["StageName"]
        _backend(account_id, region).create_stage(
            api_id,
            stage_name,
            properties["DeploymentId"],
            variables=properties.get("Variables"),
            description=properties.get("Description", ""),
            cacheClusterEnabled=properties.get("CacheClusterEnabled"),
            cacheClusterSize=properties.get("CacheClusterSize"),
            tracing_enabled=properties.get("TracingEnabled"),
        )
        return Created(stage_name, owner=api_id)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        _backend(account_id, region).delete_stage(created.owner, created.physical_id)


class AccountProvider:
    """The account's API Gateway settings: one per account and region, so deleting the resource
    leaves them (AWS does not reset them either)."""

    TYPE, NAME_PROPERTY = "AWS::ApiGateway::Account", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        role = str(properties.get("CloudWatchRoleArn", ""))
        _backend(account_id, region).update_account(
            [{"op": "replace", "path": "/cloudwatchRoleArn", "value": role}]
        )
        return Created(f"{name}-{account_id}")

    def delete(self, created: Created, account_id: str, region: str) -> None:
        return None


class WebAclProvider:
    """A WAF web ACL, known by its ARN: the local API applies the template's rules itself (waf.py),
    so the resource only needs to exist."""

    TYPE, NAME_PROPERTY = "AWS::WAFv2::WebACL", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        acl_id = str(uuid.uuid4())
        arn = f"arn:aws:wafv2:{region}:{account_id}:regional/webacl/{name}/{acl_id}"
        return Created(arn, {"Arn": arn, "Id": acl_id})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        return None


class WebAclAssociationProvider:
    TYPE, NAME_PROPERTY = "AWS::WAFv2::WebACLAssociation", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        return Created(f"{properties['ResourceArn']}|{properties['WebACLArn']}")

    def delete(self, created: Created, account_id: str, region: str) -> None:
        return None


def _backend_v2(account_id: str, region: str) -> Any:
    from moto.apigatewayv2.models import apigatewayv2_backends

    return apigatewayv2_backends[account_id][region]


class HttpApiProvider:
    """An HTTP API (API Gateway v2) in moto's API Gateway v2: its id is its Ref, as on AWS, and
    names its host (``{id}.execute-api.{region}.amazonaws.com``), where the distribution's origin
    points. The local listener (http_api.py) serves the template's routes itself."""

    TYPE, NAME_PROPERTY = "AWS::ApiGatewayV2::Api", "Name"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        api = _backend_v2(account_id, region).create_api(
            api_key_selection_expression=None,
            cors_configuration=None,
            description=str(properties.get("Description", "")),
            disable_schema_validation=None,
            disable_execute_api_endpoint=properties.get("DisableExecuteApiEndpoint", False),
            name=str(properties.get("Name", name)),
            protocol_type=str(properties.get("ProtocolType", "HTTP")),
            route_selection_expression=None,
            tags={},
            version=None,
        )
        endpoint = f"https://{api.api_id}.execute-api.{region}.amazonaws.com"
        return Created(api.api_id, {"ApiId": api.api_id, "ApiEndpoint": endpoint})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        _backend_v2(account_id, region).delete_api(created.physical_id)


class _HttpApiPart:
    """An HTTP API's integration, route or stage: the local listener reads them from the template
    (http_api.py), so each only needs an id."""

    TYPE, NAME_PROPERTY = "", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        return Created(uuid.uuid5(uuid.NAMESPACE_URL, f"{properties.get('ApiId')}/{name}").hex[:7])

    def delete(self, created: Created, account_id: str, region: str) -> None:
        return None


class HttpIntegrationProvider(_HttpApiPart):
    TYPE = "AWS::ApiGatewayV2::Integration"


class HttpRouteProvider(_HttpApiPart):
    TYPE = "AWS::ApiGatewayV2::Route"


class HttpStageProvider(_HttpApiPart):
    """The stage's Ref is its name ($default), as CloudFormation's."""

    TYPE, NAME_PROPERTY = "AWS::ApiGatewayV2::Stage", "StageName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        return Created(str(properties.get("StageName", "$default")))
