"""EventBridge rules' targets for events put on a bus (PutEvents), locally.

moto's events backend matches each put event against the bus's rules and delivers to the targets
it knows itself: SQS queues, CloudWatch Logs log groups, archives, other buses and API destinations.
It raises on any other target, and it matches every event against a rule without an event pattern,
so a scheduled rule with a Lambda target (template.yaml has one) made every PutEvents fail. Here,
as EventBridge does ("Creating rules that react to events" and "Creating a rule that runs on a
schedule", Amazon EventBridge User Guide):

- a rule whose state is DISABLED, or that has only a schedule (no event pattern), matches no event;
- a Lambda function target is invoked asynchronously with the event (or the target's constant
  ``Input``, or its ``InputTransformer``'s result), through ``deliver`` (the local stack's runtime);
- an SNS topic target gets the event as the message (moto delivers it to the subscriptions);
- a target of any other kind is skipped with a warning (EventBridge retries and then drops an
  event it cannot deliver; it never fails the PutEvents that matched it).
"""

import copy
import json
import logging
from collections.abc import Callable
from typing import Any

from moto.events import models as events_models
from moto.events.utils import EventTemplateParser
from moto.sns.exceptions import SNSException
from moto.sns.models import sns_backends
from moto.utilities.arns import parse_arn

log = logging.getLogger(__name__)

# (function ARN, event) -> whether a local function of that ARN took it.
Deliver = Callable[[str, dict[str, Any]], bool]
_MOTO_DELIVERS = {"sqs", "logs", "events"}


def deliver_rule_targets(deliver: Deliver) -> Callable[[], None]:
    """Deliver put events to the rules' targets as EventBridge does; a function that undoes it."""
    original = events_models.Rule.send_to_targets

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        if self.state == "DISABLED" or not self.event_pattern.dump():
            return
        if not self.event_pattern.matches_event(original_event):
            return
        left_to_moto = []
        for target in self.targets:
            arn = target["Arn"]
            service = parse_arn(arn).service
            if service in _MOTO_DELIVERS:
                left_to_moto.append(target)
            elif service == "lambda":
                if not deliver(arn, target_input(target, original_event)):
                    log.warning("Rule %s: no local function %s; the event is dropped", self.name, arn)
            elif service == "sns":
                _publish(arn, target_input(target, original_event))
            else:
                log.warning("Rule %s: targets of %s are not delivered locally (%s)", self.name, service, arn)
        if left_to_moto:
            view = copy.copy(self)
            view.targets = left_to_moto
            original(view, original_event, transform_input)

    events_models.Rule.send_to_targets = send_to_targets  # type: ignore[method-assign,assignment]

    def undo() -> None:
        events_models.Rule.send_to_targets = original  # type: ignore[method-assign]

    return undo


def target_input(target: dict[str, Any], event: Any) -> dict[str, Any]:
    """What a target receives: its constant Input, its InputTransformer's result, or the event."""
    if "Input" in target:
        return dict(json.loads(target["Input"]))
    transformer = target.get("InputTransformer")
    if transformer:
        text = EventTemplateParser.parse(
            input_template=transformer.get("InputTemplate"),
            input_paths_map=transformer.get("InputPathsMap", {}),
            event=event,
        )
        return text if isinstance(text, dict) else {"input": text}
    return copy.deepcopy(event)


def _publish(topic_arn: str, message: dict[str, Any]) -> None:
    arn = parse_arn(topic_arn)
    backend = sns_backends[arn.account][arn.region]
    try:
        backend.publish(message=json.dumps(message), arn=topic_arn)
    except (SNSException, ValueError) as exc:  # no such topic, a message SNS refuses
        log.warning("Rule target %s: the event was not published (%s)", topic_arn, exc)
