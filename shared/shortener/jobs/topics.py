"""Which SNS topic a job may name for its job-ended message: one in the stack's own account and
region, where the stack allows it (AllowJobTopics). The jobs worker may publish to those only."""

import re

from shortener.exceptions import InvalidRequestError

# SNS topic names: 1 to 256 letters, digits, '-' and '_' (a FIFO topic ends in ".fifo").
_TOPIC_NAME = re.compile(r"[A-Za-z0-9_-]{1,256}(\.fifo)?")


def job_topic(arn: str | None, allowed_prefix: str) -> str | None:
    """``arn`` if a job may have its job-ended message published there, None for no topic; else
    InvalidRequestError saying why. ``allowed_prefix`` is "arn:<partition>:sns:<region>:<account>:",
    or "" where the stack allows no topics."""
    if not arn:
        return None
    if not allowed_prefix:
        raise InvalidRequestError(
            "This stack does not publish job messages to SNS topics (its AllowJobTopics parameter is "
            "false); use the job-ended event on the default EventBridge bus."
        )
    name = arn.removeprefix(allowed_prefix)
    if name == arn or not _TOPIC_NAME.fullmatch(name):
        raise InvalidRequestError(
            f"notify_topic must be an SNS topic ARN of this stack's account and region "
            f"({allowed_prefix}<topic name>)."
        )
    return arn
