"""CloudWatch alarms, locally: moto stores alarms but never evaluates them. Here each alarm on an
SQS queue metric samples the queue every Period (divided by the time scale), applies its threshold,
comparison, evaluation periods and missing-data rule, records each state change in moto
(SetAlarmState) and publishes CloudWatch's notification to the alarm's topics, only on transitions.

An action on a topic encrypted with a KMS key whose policy does not let CloudWatch use it fails, as
on AWS: nothing is published, and the alarm's history records the failure with CloudWatch's words
(AWS knowledge center "cloudwatch-configure-alarm-sns"). State updates and actions are readable
with DescribeAlarmHistory (local_stack.cloudwatch.history)."""

import json
import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import ALARM, Resources
from local_stack.cloudwatch import history as alarm_history
from local_stack.cloudwatch.history import ACTION, HISTORY, STATE_UPDATE, HistoryItem
from local_stack.embedded.client import aws_client
from local_stack.kms.keys import PUBLISH_ACTIONS, KeyRing

log = logging.getLogger(__name__)

INSUFFICIENT_DATA, OK, ALARM_STATE = "INSUFFICIENT_DATA", "OK", "ALARM"
CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"
# What CloudWatch records when the topic's key policy does not let it publish.
KMS_ACTION_ERROR = "CloudWatch Alarms does not have authorization to access the SNS topic encryption key."
# The queue attribute behind each AWS/SQS metric that can be read at any moment.
SQS_METRICS = {
    "ApproximateNumberOfMessagesVisible": "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible": "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed": "ApproximateNumberOfMessagesDelayed",
}
_COMPARISONS = {
    "GreaterThanThreshold": ("greater than", lambda value, threshold: value > threshold),
    "GreaterThanOrEqualToThreshold": (
        "greater than or equal to",
        lambda value, threshold: value >= threshold,
    ),
    "LessThanThreshold": ("less than", lambda value, threshold: value < threshold),
    "LessThanOrEqualToThreshold": ("less than or equal to", lambda value, threshold: value <= threshold),
}
# The display name CloudWatch writes into notifications (the code is in AlarmArn).
REGION_NAMES = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "EU (Ireland)",
    "eu-west-2": "EU (London)",
    "eu-west-3": "EU (Paris)",
    "eu-central-1": "EU (Frankfurt)",
    "eu-north-1": "EU (Stockholm)",
    "ap-northeast-1": "Asia Pacific (Tokyo)",
    "ap-southeast-1": "Asia Pacific (Singapore)",
    "ap-southeast-2": "Asia Pacific (Sydney)",
    "ap-south-1": "Asia Pacific (Mumbai)",
    "sa-east-1": "South America (Sao Paulo)",
    "ca-central-1": "Canada (Central)",
}


@dataclass(frozen=True)
class AlarmSpec:
    """An AWS::CloudWatch::Alarm's resolved properties, typed."""

    name: str
    arn: str
    description: str
    namespace: str
    metric_name: str
    dimensions: tuple[tuple[str, str], ...]
    statistic: str
    period: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: str
    treat_missing_data: str
    alarm_actions: tuple[str, ...] = ()
    ok_actions: tuple[str, ...] = ()
    insufficient_data_actions: tuple[str, ...] = ()
    actions_enabled: bool = True

    @classmethod
    def from_properties(cls, name: str, arn: str, properties: dict[str, Any]) -> "AlarmSpec":
        evaluation_periods = int(properties["EvaluationPeriods"])
        return cls(
            name=name,
            arn=arn,
            description=properties.get("AlarmDescription", ""),
            namespace=properties.get("Namespace", ""),
            metric_name=properties.get("MetricName", ""),
            dimensions=tuple((d["Name"], str(d["Value"])) for d in properties.get("Dimensions", [])),
            statistic=properties.get("Statistic", "Average"),
            period=int(properties.get("Period", 60)),
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=int(properties.get("DatapointsToAlarm", evaluation_periods)),
            threshold=float(properties["Threshold"]),
            comparison=properties["ComparisonOperator"],
            treat_missing_data=properties.get("TreatMissingData", "missing"),
            alarm_actions=tuple(properties.get("AlarmActions", [])),
            ok_actions=tuple(properties.get("OKActions", [])),
            insufficient_data_actions=tuple(properties.get("InsufficientDataActions", [])),
            actions_enabled=str(properties.get("ActionsEnabled", True)).lower() != "false",
        )

    def actions_for(self, state: str) -> tuple[str, ...]:
        if not self.actions_enabled:
            return ()
        return {
            ALARM_STATE: self.alarm_actions,
            OK: self.ok_actions,
            INSUFFICIENT_DATA: self.insufficient_data_actions,
        }[state]


@dataclass(frozen=True)
class Transition:
    """A change of an alarm's state, with CloudWatch's reason."""

    old: str
    new: str
    reason: str
    reason_data: dict[str, Any]


@dataclass
class AlarmEvaluation:
    """The state machine of one alarm: datapoints in, transitions out. No I/O."""

    spec: AlarmSpec
    state: str = INSUFFICIENT_DATA
    window: deque[tuple[datetime, float | None]] = field(default_factory=deque)

    def add(self, when: datetime, value: float | None) -> Transition | None:
        """Record one period's datapoint (None: missing) and evaluate; the transition, if any."""
        self.window.append((when, value))
        while len(self.window) > self.spec.evaluation_periods:
            self.window.popleft()
        new = self._evaluate()
        if new == self.state:
            return None
        transition = Transition(self.state, new, self._reason(new), self._reason_data())
        self.state = new
        return transition

    def _breaches(self, value: float | None) -> bool | None:
        """Whether a datapoint breaches; None when it does not count (missing, and ignored)."""
        if value is None:
            return {"breaching": True, "notBreaching": False}.get(self.spec.treat_missing_data)
        return bool(_COMPARISONS[self.spec.comparison][1](value, self.spec.threshold))

    def _evaluate(self) -> str:
        verdicts = [self._breaches(value) for _, value in self.window]
        counted = [verdict for verdict in verdicts if verdict is not None]
        if not counted:
            # Every datapoint missing: "missing" means no data; "ignore" keeps the state.
            return self.state if self.spec.treat_missing_data == "ignore" else INSUFFICIENT_DATA
        return ALARM_STATE if sum(counted) >= self.spec.datapoints_to_alarm else OK

    def _reason(self, new: str) -> str:
        points = [(when, value) for when, value in self.window if value is not None]
        if not points:
            return "Insufficient Data: no datapoints were received for the evaluation periods."
        words = _COMPARISONS[self.spec.comparison][0]
        listed = ", ".join(
            f"{value} ({when.strftime('%d/%m/%y %H:%M:%S')})" for when, value in reversed(points)
        )
        breaching = sum(1 for _, value in points if self._breaches(value))
        count = breaching if new == ALARM_STATE else len(points) - breaching
        relation = "was" if new == ALARM_STATE else "was not"
        plural = "datapoint" if self.spec.datapoints_to_alarm == 1 else "datapoints"
        return (
            f"Threshold Crossed: {count} out of the last {len(self.window)} datapoints [{listed}] "
            f"{relation} {words} the threshold ({self.spec.threshold}) (minimum "
            f"{self.spec.datapoints_to_alarm} {plural} for {self.state} -> {new} transition)."
        )

    def _reason_data(self) -> dict[str, Any]:
        return {
            "version": "1.0",
            "queryDate": _timestamp(datetime.now(UTC)),
            "statistic": self.spec.statistic,
            "period": self.spec.period,
            "recentDatapoints": [value for _, value in self.window if value is not None],
            "threshold": self.spec.threshold,
            "evaluatedDatapoints": [
                {"timestamp": _timestamp(when), "value": value}
                for when, value in self.window
                if value is not None
            ],
        }


def notification(spec: AlarmSpec, transition: Transition, region: str, when: datetime) -> dict[str, Any]:
    """The message CloudWatch publishes to an alarm's topics on a state change."""
    return {
        "AlarmName": spec.name,
        "AlarmDescription": spec.description,
        "AWSAccountId": ACCOUNT_ID,
        "AlarmConfigurationUpdatedTimestamp": _timestamp(when),
        "NewStateValue": transition.new,
        "NewStateReason": transition.reason,
        "StateChangeTime": _timestamp(when),
        "Region": REGION_NAMES.get(region, region),
        "AlarmArn": spec.arn,
        "OldStateValue": transition.old,
        "OKActions": list(spec.ok_actions),
        "AlarmActions": list(spec.alarm_actions),
        "InsufficientDataActions": list(spec.insufficient_data_actions),
        "Trigger": {
            "MetricName": spec.metric_name,
            "Namespace": spec.namespace,
            "StatisticType": "Statistic",
            "Statistic": spec.statistic.upper(),
            "Unit": None,
            "Dimensions": [{"value": value, "name": name} for name, value in spec.dimensions],
            "Period": spec.period,
            "EvaluationPeriods": spec.evaluation_periods,
            "DatapointsToAlarm": spec.datapoints_to_alarm,
            "ComparisonOperator": spec.comparison,
            "Threshold": spec.threshold,
            "TreatMissingData": spec.treat_missing_data,
            "EvaluateLowSampleCountPercentile": "",
        },
    }


def alarm_specs(resources: Resources) -> list[AlarmSpec]:
    """The template's alarms that the local stack can evaluate (SQS queue metrics)."""
    specs = []
    for logical_id, properties in resources.of_type(ALARM).items():
        spec = AlarmSpec.from_properties(
            resources.physical_id(logical_id), resources.resolver.get_att(logical_id, "Arn"), properties
        )
        queue = dict(spec.dimensions).get("QueueName")
        if spec.namespace != "AWS/SQS" or spec.metric_name not in SQS_METRICS or queue is None:
            log.warning("%s: %s/%s is not evaluated locally", logical_id, spec.namespace, spec.metric_name)
            continue
        specs.append(spec)
    return specs


class AlarmEvaluator:
    """Samples each alarm's queue once per (scaled) period and acts on transitions. With ``keys``,
    an action on an encrypted topic succeeds only if the key's policy lets CloudWatch use it."""

    def __init__(
        self,
        specs: list[AlarmSpec],
        aws_endpoint: str,
        region: str,
        time_scale: float,
        keys: KeyRing | None = None,
    ) -> None:
        alarm_history.install()
        self._evaluations = [AlarmEvaluation(spec) for spec in specs]
        self._region = region
        self._time_scale = time_scale
        self._keys = keys
        self._sqs = aws_client("sqs", aws_endpoint, region)
        self._sns = aws_client("sns", aws_endpoint, region)
        self._cloudwatch = aws_client("cloudwatch", aws_endpoint, region)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for evaluation in self._evaluations:
            thread = threading.Thread(
                target=self._run, args=(evaluation,), name=evaluation.spec.name, daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _run(self, evaluation: AlarmEvaluation) -> None:
        while not self._stopping.wait(evaluation.spec.period / self._time_scale):
            try:
                self.evaluate(evaluation)
            except Exception:
                # One failed sample must not end the alarm: log it and try next period.
                log.exception("alarm %s: evaluation failed", evaluation.spec.name)

    def evaluate(self, evaluation: AlarmEvaluation) -> Transition | None:
        """Take one datapoint for ``evaluation`` and act on the transition it causes."""
        now = datetime.now(UTC)
        transition = evaluation.add(now, self._sample(evaluation.spec))
        if transition is not None:
            self._act(evaluation.spec, transition, now)
        return transition

    def _sample(self, spec: AlarmSpec) -> float | None:
        queue = dict(spec.dimensions)["QueueName"]
        try:
            url = self._sqs.get_queue_url(QueueName=queue, QueueOwnerAWSAccountId=ACCOUNT_ID)["QueueUrl"]
            attribute = SQS_METRICS[spec.metric_name]
            attributes = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[attribute])[
                "Attributes"
            ]
        except self._sqs.exceptions.QueueDoesNotExist:
            return None
        return float(attributes[attribute])

    def _act(self, spec: AlarmSpec, transition: Transition, when: datetime) -> None:
        log.info("alarm %s: %s -> %s", spec.name, transition.old, transition.new)
        self._cloudwatch.set_alarm_state(
            AlarmName=spec.name,
            StateValue=transition.new,
            StateReason=transition.reason[:1023],
            StateReasonData=json.dumps(transition.reason_data),
        )
        self._remember(
            spec,
            when,
            STATE_UPDATE,
            f"Alarm updated from {transition.old} to {transition.new}",
            {
                "version": "1.0",
                "oldState": {"stateValue": transition.old},
                "newState": {
                    "stateValue": transition.new,
                    "stateReason": transition.reason,
                    "stateReasonData": transition.reason_data,
                },
            },
        )
        message = json.dumps(notification(spec, transition, self._region, when))
        subject = f'{transition.new}: "{spec.name}" in {REGION_NAMES.get(self._region, self._region)}'
        for topic_arn in spec.actions_for(transition.new):
            error = self._action_error(topic_arn)
            timestamp = int(when.timestamp() * 1000)
            if error is not None:
                log.warning("alarm %s: action on %s failed: %s", spec.name, topic_arn, error)
                summary = f'Failed to execute action {topic_arn}. Received error: "{error}"'
                self._remember(
                    spec,
                    when,
                    ACTION,
                    summary,
                    {
                        "actionState": "Failed",
                        "stateUpdateTimestamp": timestamp,
                        "error": error,
                    },
                )
                continue
            self._sns.publish(TopicArn=topic_arn, Subject=subject[:100], Message=message)
            self._remember(
                spec,
                when,
                ACTION,
                f"Successfully executed action {topic_arn}",
                {
                    "actionState": "Succeeded",
                    "stateUpdateTimestamp": timestamp,
                    "notificationResource": topic_arn,
                    "publishedMessage": message,
                },
            )

    def _action_error(self, topic_arn: str) -> str | None:
        """Why CloudWatch cannot publish to the topic, or None when it can."""
        if self._keys is None:
            return None
        attributes = self._sns.get_topic_attributes(TopicArn=topic_arn)["Attributes"]
        key = attributes.get("KmsMasterKeyId")
        if key and not self._keys.service_may_use(key, CLOUDWATCH_PRINCIPAL, PUBLISH_ACTIONS, via="sns"):
            return KMS_ACTION_ERROR
        return None

    def _remember(
        self, spec: AlarmSpec, when: datetime, item_type: str, summary: str, data: dict[str, Any]
    ) -> None:
        HISTORY.record(self._region, HistoryItem(spec.name, when, item_type, summary, data))


def _timestamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}+0000"
