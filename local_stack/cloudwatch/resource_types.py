"""CloudWatch's CloudFormation types: AWS::CloudWatch::Alarm in moto's CloudWatch (the alarm
evaluator, alarms.py, reads the template's alarms and records their states there) and
AWS::Logs::SubscriptionFilter in moto's CloudWatch Logs (logs.py delivers the access log by them)."""

from typing import Any

from local_stack.resource_provider import Created


class AlarmProvider:
    TYPE, NAME_PROPERTY = "AWS::CloudWatch::Alarm", "AlarmName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.cloudwatch.models import MetricDataQuery, cloudwatch_backends

        queries = [
            MetricDataQuery(
                query_id=query["Id"],
                label=query.get("Label", ""),
                period=query.get("Period"),
                return_data=str(query.get("ReturnData", True)).lower(),
                expression=query.get("Expression"),
                metric_stat=_metric_stat(query.get("MetricStat")),
            )
            for query in properties.get("Metrics", [])
        ]
        alarm = cloudwatch_backends[account_id][region].put_metric_alarm(
            name=name,
            namespace=properties.get("Namespace"),  # type: ignore[arg-type]
            metric_name=properties.get("MetricName"),  # type: ignore[arg-type]
            metric_data_queries=queries or None,
            comparison_operator=properties["ComparisonOperator"],
            evaluation_periods=int(properties["EvaluationPeriods"]),
            datapoints_to_alarm=_int_or_none(properties.get("DatapointsToAlarm")),
            period=_int_or_none(properties.get("Period")),  # type: ignore[arg-type]
            threshold=float(properties["Threshold"]),
            statistic=properties.get("Statistic"),  # type: ignore[arg-type]
            extended_statistic=properties.get("ExtendedStatistic"),
            unit=properties.get("Unit"),
            description=properties.get("AlarmDescription", ""),
            dimensions=properties.get("Dimensions", []),
            alarm_actions=properties.get("AlarmActions", []),
            ok_actions=properties.get("OKActions", []),
            insufficient_data_actions=properties.get("InsufficientDataActions", []),
            treat_missing_data=properties.get("TreatMissingData"),
            actions_enabled=str(properties.get("ActionsEnabled", True)).lower() != "false",
        )
        return Created(name, {"Arn": alarm.alarm_arn})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.cloudwatch.models import cloudwatch_backends

        cloudwatch_backends[account_id][region].delete_alarms([created.physical_id])


class LogSubscriptionFilterProvider:
    TYPE, NAME_PROPERTY = "AWS::Logs::SubscriptionFilter", "FilterName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.logs.models import logs_backends

        group = str(properties["LogGroupName"])
        logs_backends[account_id][region].put_subscription_filter(
            group,
            name,
            str(properties.get("FilterPattern", "")),
            str(properties["DestinationArn"]),
            str(properties.get("RoleArn", "")),
        )
        return Created(name, owner=group)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.logs.models import logs_backends

        logs_backends[account_id][region].delete_subscription_filter(created.owner, created.physical_id)


def _metric_stat(stat: dict[str, Any] | None) -> Any:  # moto's types say str where None is taken
    """moto's MetricStat for a metric math query's ``MetricStat`` property (None for an expression)."""
    from moto.cloudwatch.models import Dimension, Metric, MetricStat

    if not stat:
        return None
    described = stat["Metric"]
    return MetricStat(
        metric=Metric(
            metric_name=described["MetricName"],
            namespace=described["Namespace"],
            dimensions=[Dimension(name=d["Name"], value=d["Value"]) for d in described.get("Dimensions", [])],
        ),
        period=stat.get("Period"),  # type: ignore[arg-type]
        stat=stat.get("Stat"),  # type: ignore[arg-type]
        unit=stat.get("Unit"),  # type: ignore[arg-type]
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
