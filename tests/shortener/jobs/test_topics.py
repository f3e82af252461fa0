"""Which SNS topic a job may name for its job-ended message."""

import pytest

from shortener.exceptions import InvalidRequestError
from shortener.jobs.topics import job_topic

PREFIX = "arn:aws:sns:us-east-1:123456789012:"


def test_a_topic_of_the_stacks_account_and_region_is_taken() -> None:
    assert job_topic(PREFIX + "jobs-done", PREFIX) == PREFIX + "jobs-done"
    assert job_topic(PREFIX + "jobs.fifo", PREFIX) == PREFIX + "jobs.fifo"
    assert job_topic(None, PREFIX) is None
    assert job_topic("", "") is None


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:eu-west-1:123456789012:jobs",  # another region
        "arn:aws:sns:us-east-1:999999999999:jobs",  # another account
        PREFIX + "a/b",
        PREFIX,
        "https://example.com/hook",
    ],
)
def test_any_other_topic_is_refused(arn: str) -> None:
    with pytest.raises(InvalidRequestError, match="notify_topic"):
        job_topic(arn, PREFIX)


def test_no_topic_is_taken_where_the_stack_allows_none() -> None:
    with pytest.raises(InvalidRequestError, match="AllowJobTopics"):
        job_topic(PREFIX + "jobs", "")
