"""The edge's CloudFormation types in moto: the distribution exists in CloudFront (invalidations name
it), the logs' delivery joins the distribution to its log group."""

from typing import Any

import boto3
import pytest

from local_stack.cloudfront.resource_types import (
    DeliveryDestinationProvider,
    DeliveryProvider,
    DeliverySourceProvider,
    DistributionProvider,
)

pytestmark = pytest.mark.integration

ACCOUNT, REGION = "123456789012", "us-east-1"
CONFIG: dict[str, Any] = {
    "DistributionConfig": {
        "Enabled": True,
        "Origins": [
            {
                "Id": "api",
                "DomainName": "abc.execute-api.us-east-1.amazonaws.com",
                "OriginPath": "/edge",
                "CustomOriginConfig": {"OriginProtocolPolicy": "https-only"},
            }
        ],
        "DefaultCacheBehavior": {"TargetOriginId": "api", "ViewerProtocolPolicy": "redirect-to-https"},
    }
}


def test_a_distribution_takes_invalidations_and_delivers_its_logs(moto: None) -> None:
    # Given the distribution created from the template's properties
    created = DistributionProvider().create("EdgeDistribution", CONFIG, ACCOUNT, REGION)
    assert created.attributes["DomainName"].endswith(".cloudfront.net")
    # Then CloudFront takes an invalidation of it
    cloudfront = boto3.client("cloudfront")
    cloudfront.create_invalidation(
        DistributionId=created.physical_id,
        InvalidationBatch={"Paths": {"Quantity": 1, "Items": ["/abc"]}, "CallerReference": "one"},
    )
    listed = cloudfront.list_invalidations(DistributionId=created.physical_id)["InvalidationList"]
    assert listed["Quantity"] == 1
    # And its logs' delivery joins it to a log group
    arn = f"arn:aws:cloudfront::{ACCOUNT}:distribution/{created.physical_id}"
    DeliverySourceProvider().create("edge", {"ResourceArn": arn, "LogType": "ACCESS_LOGS"}, ACCOUNT, REGION)
    destination = DeliveryDestinationProvider().create(
        "edge",
        {
            "OutputFormat": "json",
            "DestinationResourceArn": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/vendedlogs/x",
        },
        ACCOUNT,
        REGION,
    )
    delivery = DeliveryProvider().create(
        "EdgeLogDelivery",
        {
            "DeliverySourceName": "edge",
            "DeliveryDestinationArn": destination.attributes["Arn"],
            "RecordFields": ["sc-status"],
        },
        ACCOUNT,
        REGION,
    )
    [listed_delivery] = boto3.client("logs").describe_deliveries()["deliveries"]
    assert listed_delivery["id"] == delivery.physical_id
    assert listed_delivery["recordFields"] == ["sc-status"]
