"""IAM policy evaluation on the local stack: wildcards, case, Deny, Not- elements, conditions,
principals; as the IAM User Guide describes them."""

from typing import Any

import pytest

from local_stack.iam.policy import Caller, Decision, Policy, PolicyError, Request, evaluate

LINKS = "arn:aws:dynamodb:us-east-1:123456789012:table/local-Links"
JOBS = "arn:aws:dynamodb:us-east-1:123456789012:table/local-Jobs"
POLLER = "arn:aws:lambda:us-east-1:123456789012:function:local-poller"


def policy(*statements: dict[str, Any]) -> Policy:
    return Policy.parse({"Version": "2012-10-17", "Statement": list(statements)})


def allow(action: Any, resource: Any = "*", **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def decide(policies: Policy | list[Policy], action: str, resource: str, **request: Any) -> Decision:
    return evaluate(
        policies if isinstance(policies, list) else [policies], Request(action, resource, **request)
    )


def test_an_action_on_a_resource_the_policy_names_is_allowed() -> None:
    assert decide(policy(allow("dynamodb:PutItem", LINKS)), "dynamodb:PutItem", LINKS) is Decision.ALLOW


def test_what_no_statement_allows_is_implicitly_denied() -> None:
    granted = policy(allow("dynamodb:PutItem", LINKS))
    assert decide(granted, "dynamodb:DeleteItem", LINKS) is Decision.IMPLICIT_DENY
    assert decide(granted, "dynamodb:PutItem", JOBS) is Decision.IMPLICIT_DENY


def test_action_names_are_case_insensitive() -> None:
    assert decide(policy(allow("DynamoDB:putitem", LINKS)), "dynamodb:PutItem", LINKS) is Decision.ALLOW


@pytest.mark.parametrize(
    ("pattern", "action", "expected"),
    [
        ("dynamodb:*", "dynamodb:BatchWriteItem", Decision.ALLOW),
        ("dynamodb:*Item", "dynamodb:UpdateItem", Decision.ALLOW),
        ("dynamodb:Get?tem", "dynamodb:GetItem", Decision.ALLOW),
        ("dynamodb:Get?tem", "dynamodb:GetItems", Decision.IMPLICIT_DENY),
        ("dynamodb:Get*", "sqs:GetQueueUrl", Decision.IMPLICIT_DENY),
        ("*", "sqs:GetQueueUrl", Decision.ALLOW),
    ],
)
def test_action_wildcards(pattern: str, action: str, expected: Decision) -> None:
    assert decide(policy(allow(pattern)), action, LINKS) is expected


@pytest.mark.parametrize(
    ("pattern", "resource", "expected"),
    [
        ("arn:aws:dynamodb:*:*:table/local-*", LINKS, Decision.ALLOW),
        ("arn:aws:dynamodb:us-east-?:123456789012:table/local-Links", LINKS, Decision.ALLOW),
        # ARNs are case-sensitive
        ("arn:aws:dynamodb:us-east-1:123456789012:table/local-links", LINKS, Decision.IMPLICIT_DENY),
        # a table's ARN does not cover its indexes
        (LINKS, f"{LINKS}/index/by-url", Decision.IMPLICIT_DENY),
        (f"{LINKS}/index/*", f"{LINKS}/index/by-url", Decision.ALLOW),
        # inside a segment * does not cross a colon; at the end of one it may
        ("arn:aws:lambda:us-*1:123456789012:function:local-poller", POLLER, Decision.ALLOW),
        (
            "arn:aws:lambda:*1:123456789012:function:local-poller",
            "arn:aws:lambda:x:1:123456789012:function:local-poller",
            Decision.IMPLICIT_DENY,
        ),
        ("arn:aws:lambda:us-east-1:123456789012:function:local-*", f"{POLLER}:live", Decision.ALLOW),
        # ? is one character, never a colon
        ("arn:aws:sqs:us-east-1:123456789012:q?", "arn:aws:sqs:us-east-1:123456789012:q1", Decision.ALLOW),
        (
            "arn:aws:sqs:us-east-1:123456789012:q?",
            "arn:aws:sqs:us-east-1:123456789012:q12",
            Decision.IMPLICIT_DENY,
        ),
        # regular-expression characters are literal
        (
            "arn:aws:sqs:us-east-1:123456789012:a.c",
            "arn:aws:sqs:us-east-1:123456789012:abc",
            Decision.IMPLICIT_DENY,
        ),
    ],
)
def test_resource_wildcards(pattern: str, resource: str, expected: Decision) -> None:
    assert decide(policy(allow("*", pattern)), "dynamodb:GetItem", resource) is expected


def test_an_explicit_deny_wins_over_any_allow() -> None:
    # Given one policy that allows everything and another that denies deletes on the links table
    policies = [
        policy(allow("dynamodb:*", "*")),
        policy({"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": LINKS}),
    ]
    # Then a delete there is denied explicitly, and the rest stays allowed
    assert decide(policies, "dynamodb:DeleteItem", LINKS) is Decision.EXPLICIT_DENY
    assert decide(policies, "dynamodb:DeleteItem", JOBS) is Decision.ALLOW


def test_not_action_allows_every_other_action() -> None:
    granted = policy({"Effect": "Allow", "NotAction": "dynamodb:Delete*", "Resource": LINKS})
    assert decide(granted, "dynamodb:PutItem", LINKS) is Decision.ALLOW
    assert decide(granted, "dynamodb:DeleteItem", LINKS) is Decision.IMPLICIT_DENY


def test_not_resource_allows_every_other_resource() -> None:
    granted = policy({"Effect": "Allow", "Action": "dynamodb:*", "NotResource": LINKS})
    assert decide(granted, "dynamodb:PutItem", JOBS) is Decision.ALLOW
    assert decide(granted, "dynamodb:PutItem", LINKS) is Decision.IMPLICIT_DENY


def test_a_condition_on_a_key_the_request_lacks_does_not_hold() -> None:
    granted = policy(
        allow("dynamodb:*", "*", Condition={"StringEquals": {"aws:SourceAccount": "123456789012"}})
    )
    assert decide(granted, "dynamodb:PutItem", LINKS) is Decision.IMPLICIT_DENY
    context = {"aws:sourceaccount": ["123456789012"]}  # key names are case-insensitive
    assert decide(granted, "dynamodb:PutItem", LINKS, context=context) is Decision.ALLOW


@pytest.mark.parametrize(
    ("condition", "context", "expected"),
    [
        # negated operators hold when the key is absent
        ({"StringNotEquals": {"k": "a"}}, {}, Decision.ALLOW),
        ({"StringNotEquals": {"k": ["a", "b"]}}, {"k": ["b"]}, Decision.IMPLICIT_DENY),
        ({"StringLike": {"k": "arn:*:q-?"}}, {"k": ["arn:x:q-1"]}, Decision.ALLOW),
        ({"StringEqualsIgnoreCase": {"k": "ABC"}}, {"k": ["abc"]}, Decision.ALLOW),
        ({"StringEqualsIfExists": {"k": "a"}}, {}, Decision.ALLOW),
        ({"StringEqualsIfExists": {"k": "a"}}, {"k": ["b"]}, Decision.IMPLICIT_DENY),
        ({"Null": {"k": "true"}}, {}, Decision.ALLOW),
        ({"Null": {"k": "false"}}, {}, Decision.IMPLICIT_DENY),
        (
            {"ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:*:*:alarm:local-*"}},
            {"aws:SourceArn": ["arn:aws:cloudwatch:us-east-1:1:alarm:local-Low"]},
            Decision.ALLOW,
        ),
        ({"NumericLessThan": {"n": "10"}}, {"n": ["3"]}, Decision.ALLOW),
        (
            {"Bool": {"aws:SecureTransport": "true"}},
            {"aws:SecureTransport": ["false"]},
            Decision.IMPLICIT_DENY,
        ),
        ({"ForAllValues:StringEquals": {"k": ["a", "b"]}}, {"k": ["a", "b"]}, Decision.ALLOW),
        ({"ForAllValues:StringEquals": {"k": ["a", "b"]}}, {"k": ["a", "c"]}, Decision.IMPLICIT_DENY),
        ({"ForAnyValue:StringEquals": {"k": ["a", "b"]}}, {"k": ["c", "b"]}, Decision.ALLOW),
        ({"ForAnyValue:StringEquals": {"k": ["a"]}}, {}, Decision.IMPLICIT_DENY),
        # operators in one block, and keys in one operator, must all hold
        ({"StringEquals": {"k": "a", "j": "b"}}, {"k": ["a"], "j": ["c"]}, Decision.IMPLICIT_DENY),
    ],
)
def test_condition_operators(
    condition: dict[str, Any], context: dict[str, list[str]], expected: Decision
) -> None:
    granted = policy(allow("sqs:*", "*", Condition=condition))
    assert decide(granted, "sqs:SendMessage", "*", context=context) is expected


@pytest.mark.parametrize(
    "statement",
    [
        allow("sqs:*", "*", Condition={"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"}}),
        allow("sqs:*", "*", Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}),
        allow("s3:*", "arn:aws:s3:::bucket/${aws:username}/*"),
        {"Effect": "Maybe", "Action": "sqs:*", "Resource": "*"},
        {"Effect": "Allow", "Action": "sqs:*", "NotAction": "sqs:Delete*", "Resource": "*"},
    ],
)
def test_what_cannot_be_evaluated_faithfully_is_refused_at_load(statement: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        policy(statement)


def test_a_key_policy_admits_the_service_principal_it_names() -> None:
    # Given a key policy granting CloudWatch and the account root
    key_policy = policy(
        {
            "Effect": "Allow",
            "Principal": {"Service": ["cloudwatch.amazonaws.com"]},
            "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
            "Resource": "*",
        },
        {
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
    )
    key = "arn:aws:kms:us-east-1:123456789012:key/k"
    cloudwatch = Caller(service="cloudwatch.amazonaws.com")
    # Then CloudWatch may generate data keys, another service may not, and a role of the account may
    assert decide(key_policy, "kms:GenerateDataKey", key, caller=cloudwatch) is Decision.ALLOW
    assert decide(key_policy, "kms:Encrypt", key, caller=cloudwatch) is Decision.IMPLICIT_DENY
    assert (
        decide(key_policy, "kms:Decrypt", key, caller=Caller(service="events.amazonaws.com"))
        is Decision.IMPLICIT_DENY
    )
    role = Caller(account="123456789012", arns=("arn:aws:iam::123456789012:role/r",))
    assert decide(key_policy, "kms:Encrypt", key, caller=role) is Decision.ALLOW
