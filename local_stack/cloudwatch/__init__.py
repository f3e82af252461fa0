"""CloudWatch, locally: the template's alarms evaluated against the metrics the functions publish
(``alarms``), their actions run, and their history answered by DescribeAlarmHistory (``history``)."""

from local_stack.cloudwatch.alarms import AlarmEvaluator, alarm_specs

__all__ = ["AlarmEvaluator", "alarm_specs"]
