"""Alarm evaluation: states from datapoints, transitions only on change, CloudWatch's message."""

from datetime import UTC, datetime

import pytest

from local_stack.cloudwatch.alarms import (
    ALARM_STATE,
    INSUFFICIENT_DATA,
    OK,
    AlarmEvaluation,
    AlarmSpec,
    notification,
)

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def spec(**overrides: object) -> AlarmSpec:
    properties = {
        "AlarmDescription": "Backlog above the low threshold.",
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Dimensions": [{"Name": "QueueName", "Value": "local-BulkQueue"}],
        "Statistic": "Maximum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "Threshold": "10",
        "ComparisonOperator": "GreaterThanThreshold",
        "TreatMissingData": "notBreaching",
        "AlarmActions": ["arn:aws:sns:us-east-1:123456789012:scaling"],
        "OKActions": ["arn:aws:sns:us-east-1:123456789012:scaling"],
        **overrides,
    }
    return AlarmSpec.from_properties(
        "local-Low", "arn:aws:cloudwatch:us-east-1:123456789012:alarm:local-Low", properties
    )


def test_an_alarm_starts_with_insufficient_data() -> None:
    assert AlarmEvaluation(spec()).state == INSUFFICIENT_DATA


def test_transitions_happen_once_per_change() -> None:
    # Given an alarm with threshold 10
    evaluation = AlarmEvaluation(spec())
    # When the backlog is low, then high twice, then low
    states = [evaluation.add(NOW, value) for value in (0.0, 42.0, 50.0, 3.0)]
    # Then it notifies INSUFFICIENT_DATA -> OK -> ALARM, stays quiet, then ALARM -> OK
    assert [(t.old, t.new) if t else None for t in states] == [
        (INSUFFICIENT_DATA, OK),
        (OK, ALARM_STATE),
        None,
        (ALARM_STATE, OK),
    ]


def test_all_evaluation_periods_must_breach() -> None:
    evaluation = AlarmEvaluation(spec(EvaluationPeriods=3))
    for value in (20.0, 20.0):
        evaluation.add(NOW, value)
    assert evaluation.state == OK  # two of three so far (the missing one does not breach)
    evaluation.add(NOW, 20.0)
    assert evaluation.state == ALARM_STATE


@pytest.mark.parametrize(
    ("treatment", "expected"),
    [
        ("notBreaching", OK),
        ("breaching", ALARM_STATE),
        ("missing", INSUFFICIENT_DATA),
        ("ignore", INSUFFICIENT_DATA),
    ],
)
def test_missing_data_follows_the_alarms_rule(treatment: str, expected: str) -> None:
    evaluation = AlarmEvaluation(spec(TreatMissingData=treatment))
    evaluation.add(NOW, None)
    assert evaluation.state == expected


def test_the_notification_has_cloudwatchs_shape() -> None:
    evaluation = AlarmEvaluation(spec())
    evaluation.add(NOW, 0.0)
    transition = evaluation.add(NOW, 42.0)
    assert transition is not None
    message = notification(evaluation.spec, transition, "us-east-1", NOW)
    assert message["AlarmName"] == "local-Low"
    assert message["NewStateValue"] == "ALARM"
    assert message["OldStateValue"] == "OK"
    assert message["Region"] == "US East (N. Virginia)"
    assert message["AlarmArn"].startswith("arn:aws:cloudwatch:us-east-1:")
    assert message["AWSAccountId"] == "123456789012"
    assert message["StateChangeTime"] == "2026-11-22T10:00:00.000+0000"
    assert "was greater than the threshold (10.0)" in message["NewStateReason"]
    trigger = message["Trigger"]
    assert trigger["Dimensions"] == [{"value": "local-BulkQueue", "name": "QueueName"}]
    assert (trigger["MetricName"], trigger["Namespace"]) == ("ApproximateNumberOfMessagesVisible", "AWS/SQS")
    assert (trigger["Period"], trigger["EvaluationPeriods"], trigger["Threshold"]) == (60, 1, 10.0)
    assert (trigger["ComparisonOperator"], trigger["TreatMissingData"]) == (
        "GreaterThanThreshold",
        "notBreaching",
    )
