"""CloudWatch alarm state-change notifications, as CloudWatch publishes them to SNS.

The ``Message`` of the SNS record is this JSON document. Two traps, both verified on AWS: ``Region``
is a display name ("US East (N. Virginia)"), so the region code comes from ``AlarmArn``; and the
keys of ``Trigger.Dimensions`` are lowercase ``name`` / ``value``."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

AlarmState = Literal["OK", "ALARM", "INSUFFICIENT_DATA"]

QUEUE_NAME_DIMENSION = "QueueName"


class AlarmDimension(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    value: str


class AlarmTrigger(BaseModel):
    """The metric the alarm watches. Metric-math alarms carry ``Metrics`` instead of dimensions."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    MetricName: str | None = None
    Namespace: str | None = None
    Dimensions: list[AlarmDimension] = Field(default_factory=list)
    Threshold: float | None = None
    ComparisonOperator: str | None = None


class AlarmArnParts(BaseModel):
    """The parts of ``arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>``."""

    model_config = ConfigDict(frozen=True)

    region: str
    account_id: str
    alarm_name: str

    @classmethod
    def parse(cls, arn: str) -> "AlarmArnParts":
        parts = arn.split(":", 6)
        if len(parts) != 7 or parts[0] != "arn" or parts[2] != "cloudwatch" or parts[5] != "alarm":
            raise ValueError(f"not a CloudWatch alarm ARN: {arn!r}")
        return cls(region=parts[3], account_id=parts[4], alarm_name=parts[6])


class AlarmNotification(BaseModel):
    """One alarm state change (the JSON inside the SNS record's ``Message``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    AlarmName: str
    AlarmArn: str
    NewStateValue: AlarmState
    OldStateValue: AlarmState
    StateChangeTime: str | None = None
    Region: str | None = None  # a display name such as "US East (N. Virginia)": never a region code
    NewStateReason: str | None = None
    Trigger: AlarmTrigger = Field(default_factory=AlarmTrigger)

    @field_validator("AlarmArn")
    @classmethod
    def _is_an_alarm_arn(cls, value: str) -> str:
        AlarmArnParts.parse(value)
        return value

    @property
    def arn(self) -> AlarmArnParts:
        return AlarmArnParts.parse(self.AlarmArn)

    @property
    def queue_name(self) -> str | None:
        """The SQS queue the alarm watches, from its ``QueueName`` dimension."""
        for dimension in self.Trigger.Dimensions:
            if dimension.name == QUEUE_NAME_DIMENSION:
                return dimension.value
        return None

    @property
    def entered_alarm(self) -> bool:
        """A transition into ALARM from any other state: the backlog crossed a threshold."""
        return self.NewStateValue == "ALARM" and self.OldStateValue != "ALARM"

    @property
    def returned_to_ok(self) -> bool:
        """ALARM -> OK: the backlog fell back below a threshold. Nothing else counts as recovery."""
        return self.OldStateValue == "ALARM" and self.NewStateValue == "OK"
