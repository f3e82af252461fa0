"""AWS::SQS::QueuePolicy, which moto's CloudFormation skips with a warning ("not supported"): the
policy document set as each queue's ``Policy`` attribute, as CloudFormation does ("AWS::SQS::
QueuePolicy", CloudFormation User Guide), and removed again on delete."""

import json
from typing import Any

from local_stack.resource_provider import Created


class QueuePolicyProvider:
    TYPE, NAME_PROPERTY = "AWS::SQS::QueuePolicy", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.sqs.models import sqs_backends

        queues = [_queue_name(str(url)) for url in properties["Queues"]]
        document = json.dumps(properties["PolicyDocument"])
        for queue in queues:
            sqs_backends[account_id][region].set_queue_attributes(queue, {"Policy": document})
        return Created(name, owner=",".join(queues))

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.sqs.models import sqs_backends

        backend = sqs_backends[account_id][region]
        for queue in filter(None, created.owner.split(",")):
            if queue in backend.queues:
                backend.set_queue_attributes(queue, {"Policy": ""})


def _queue_name(url: str) -> str:
    """A queue's name from its URL (the Ref of AWS::SQS::Queue) or ARN."""
    return url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
