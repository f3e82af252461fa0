"""The deploy's reserved concurrency against the account's quota, without AWS."""

from pathlib import Path

from samtranslator.yaml_helper import yaml_parse

from stack_tools.concurrency import check_quota, parameter_overrides, template_reservations

TEMPLATE = yaml_parse((Path(__file__).parents[2] / "template.yaml").read_text(encoding="utf-8"))


def settings(quota: int, unreserved: int) -> dict[str, object]:
    return {"AccountLimit": {"ConcurrentExecutions": quota, "UnreservedConcurrentExecutions": unreserved}}


def test_the_template_reserves_two_executions_per_loop_the_files_ten_and_the_apis_when_set() -> None:
    assert template_reservations(TEMPLATE, {}) == {"PollerFunction": 20, "FilesFunction": 10}
    assert template_reservations(TEMPLATE, {"MaxLoops": "50", "ApiReservedConcurrency": "7"}) == {
        "PollerFunction": 100,
        "FilesFunction": 10,
        "ApiFunction": 7,
    }


def test_a_quota_that_leaves_fewer_than_100_unreserved_is_refused_with_the_quota_to_ask_for() -> None:
    # Given a new account's low quota, with 5 executions reserved by another stack
    check = check_quota(20, settings(quota=110, unreserved=105))
    # Then the stack's 20 do not fit, and the quota to ask for keeps the others' 5 and 100 unreserved
    assert not check.fits
    assert check.needed_quota == 125
    assert "at least 125" in check.message() and "L-B99A9384" in check.message()
    # And with the default quota they fit; an update gives back what the stack holds today
    assert check_quota(20, settings(quota=1000, unreserved=1000)).fits
    assert check_quota(20, settings(quota=120, unreserved=100), held_now=20).fits


def test_parameter_overrides_are_read_as_sam_writes_them() -> None:
    assert parameter_overrides('Stage=dev MaxLoops="3" AlarmEmail=ops@example.com') == {
        "Stage": "dev",
        "MaxLoops": "3",
        "AlarmEmail": "ops@example.com",
    }
    assert parameter_overrides("ParameterKey=MaxLoops,ParameterValue=4") == {"MaxLoops": "4"}
