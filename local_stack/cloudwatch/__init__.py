"""CloudWatch, locally: the template's alarms evaluated against the metrics the functions publish
(``alarms``), their actions run, and their history answered by DescribeAlarmHistory (``history``);
CloudWatch Logs for the API's access log and its subscription filters (``logs``), its lines not yet
delivered kept with the durable state (``log_state``)."""

from local_stack.cloudwatch.alarms import AlarmEvaluator, alarm_specs

__all__ = ["AlarmEvaluator", "alarm_specs"]
