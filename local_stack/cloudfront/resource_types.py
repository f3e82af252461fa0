"""The edge's CloudFormation types in moto's backends (moto's CloudFormation has no model for them).

The distribution is created in moto's CloudFront, so CreateInvalidation and ListInvalidations work
against its id as on AWS; its cache and origin request policies, and the logs' delivery source,
destination and delivery, only need to exist: the local edge reads what they say from the template
itself (local_stack/cloudfront/log_fields.py)."""

import uuid
from typing import Any

from moto.cloudfront.models import cloudfront_backends
from moto.logs.models import logs_backends

from local_stack.resource_provider import Created

# CloudFront is global: moto keeps its distributions per partition.
_GLOBAL = "aws"


class DistributionProvider:
    TYPE, NAME_PROPERTY = "AWS::CloudFront::Distribution", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        config = properties["DistributionConfig"]
        origins = [
            {
                "Id": origin["Id"],
                "DomainName": origin["DomainName"],
                "OriginPath": origin.get("OriginPath", ""),
                "CustomOriginConfig": {
                    "HTTPPort": 80,
                    "HTTPSPort": 443,
                    "OriginProtocolPolicy": origin.get("CustomOriginConfig", {}).get(
                        "OriginProtocolPolicy", "https-only"
                    ),
                },
            }
            for origin in config["Origins"]
        ]
        behaviour = config["DefaultCacheBehavior"]
        distribution, _, _ = cloudfront_backends[account_id][_GLOBAL].create_distribution(
            {
                "CallerReference": f"{name}-{uuid.uuid4()}",
                "Comment": config.get("Comment", ""),
                "Enabled": bool(config.get("Enabled", True)),
                "Origins": {"Quantity": len(origins), "Items": origins},
                "DefaultCacheBehavior": {
                    "TargetOriginId": behaviour["TargetOriginId"],
                    "ViewerProtocolPolicy": behaviour.get("ViewerProtocolPolicy", "allow-all"),
                },
            },
            [],
        )
        return Created(
            distribution.distribution_id,
            {"DomainName": distribution.domain_name, "Id": distribution.distribution_id},
        )

    def delete(self, created: Created, account_id: str, region: str) -> None:
        cloudfront_backends[account_id][_GLOBAL].distributions.pop(created.physical_id, None)


class _Exists:
    """A resource the local stack only needs to exist (its id as its Ref and Id)."""

    TYPE, NAME_PROPERTY = "", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        resource_id = str(uuid.uuid4())
        return Created(resource_id, {"Id": resource_id})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        return None


class CachePolicyProvider(_Exists):
    TYPE = "AWS::CloudFront::CachePolicy"


class OriginRequestPolicyProvider(_Exists):
    TYPE = "AWS::CloudFront::OriginRequestPolicy"


class FunctionProvider:
    """A CloudFront Function: only its ARN is needed (the local edge runs the one the template
    associates with its behaviour itself: cloudfront/edge.py, ``VIEWER_FUNCTIONS``)."""

    TYPE, NAME_PROPERTY = "AWS::CloudFront::Function", "Name"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        arn = f"arn:aws:cloudfront::{account_id}:function/{name}"
        return Created(arn, {"FunctionARN": arn, "FunctionMetadata.FunctionARN": arn, "Stage": "LIVE"})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        return None


class DeliverySourceProvider:
    TYPE, NAME_PROPERTY = "AWS::Logs::DeliverySource", "Name"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        source = logs_backends[account_id][region].put_delivery_source(
            name, str(properties["ResourceArn"]), str(properties["LogType"]), {}
        )
        return Created(name, {"Arn": source.arn})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        logs_backends[account_id][region].delivery_sources.pop(created.physical_id, None)


class DeliveryDestinationProvider:
    TYPE, NAME_PROPERTY = "AWS::Logs::DeliveryDestination", "Name"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        destination = logs_backends[account_id][region].put_delivery_destination(
            name,
            properties.get("OutputFormat"),
            {"destinationResourceArn": str(properties["DestinationResourceArn"])},
            {},
        )
        return Created(name, {"Arn": destination.arn})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        logs_backends[account_id][region].delivery_destinations.pop(created.physical_id, None)


class DeliveryProvider:
    TYPE, NAME_PROPERTY = "AWS::Logs::Delivery", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        delivery = logs_backends[account_id][region].create_delivery(
            str(properties["DeliverySourceName"]),
            str(properties["DeliveryDestinationArn"]),
            list(properties.get("RecordFields") or []),
            properties.get("FieldDelimiter"),
            None,
            {},
        )
        return Created(delivery.id, {"Arn": delivery.arn, "DeliveryId": delivery.id})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        logs_backends[account_id][region].deliveries.pop(created.physical_id, None)
