"""SNS, locally: a topic's HTTP notification to the local Lambda endpoint turned into the event
Lambda receives from SNS (``subscriptions``)."""

from local_stack.sns.subscriptions import lambda_event

__all__ = ["lambda_event"]
