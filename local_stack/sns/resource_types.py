"""AWS::SNS::Subscription (and a topic's inline ``Subscription``), created in moto's SNS."""

from typing import Any

from local_stack.resource_provider import Created


class SubscriptionProvider:
    TYPE, NAME_PROPERTY = "AWS::SNS::Subscription", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.sns.models import sns_backends

        subscription = sns_backends[account_id][region].subscribe(
            properties["TopicArn"], properties["Endpoint"], properties["Protocol"]
        )
        return Created(subscription.arn, {"Arn": subscription.arn})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.sns.models import sns_backends

        sns_backends[account_id][region].unsubscribe(created.physical_id)
