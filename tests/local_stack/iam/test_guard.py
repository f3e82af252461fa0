"""The access control: a function's call, with the request context AWS gives it, judged against
the function's policies."""

import json
from typing import Any

from local_stack.iam import AccessControl, Principal, Signature
from local_stack.iam.calls import parse_call
from local_stack.iam.policy import Policy

REGION, ACCOUNT = "us-east-1", "123456789012"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/links"


def control(*statements: dict[str, Any]) -> tuple[AccessControl, Principal]:
    principal = Principal(
        "fn",
        "fn-role",
        f"arn:aws:iam::{ACCOUNT}:role/fn-role",
        (Policy.parse({"Statement": list(statements)}),),
    )
    access = AccessControl()
    access.load({principal.access_key: principal})
    return access, principal


def dynamodb(operation: str, body: dict[str, Any]) -> Any:
    target = {"x-amz-target": f"DynamoDB_20120810.{operation}"}
    return parse_call("dynamodb", target, json.dumps(body).encode(), region=REGION, account=ACCOUNT)


def test_a_policy_may_allow_writes_only_inside_transactions() -> None:
    # Given the DynamoDB guide's "allow only transactional operations" policy
    access, principal = control(
        {
            "Effect": "Allow",
            "Action": ["dynamodb:PutItem", "dynamodb:ConditionCheckItem"],
            "Resource": TABLE,
            "Condition": {
                "ForAnyValue:StringEquals": {"dynamodb:EnclosingOperation": ["TransactWriteItems"]}
            },
        }
    )
    # Then a put inside a transaction is allowed, and a plain PutItem is refused
    transaction = dynamodb(
        "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "links", "Item": {}}}]}
    )
    assert access.authorise(principal, transaction) is None
    refusal = access.authorise(principal, dynamodb("PutItem", {"TableName": "links", "Item": {}}))
    assert refusal is not None and refusal.access.action == "dynamodb:PutItem"


def test_a_function_reaches_aws_over_https_in_its_region() -> None:
    access, principal = control(
        {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": TABLE},
        {
            "Effect": "Deny",
            "Action": "*",
            "Resource": "*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
        {
            "Effect": "Deny",
            "Action": "*",
            "Resource": "*",
            "Condition": {"StringNotEquals": {"aws:RequestedRegion": REGION}},
        },
    )
    assert access.authorise(principal, dynamodb("GetItem", {"TableName": "links", "Key": {}})) is None


def test_the_first_refused_access_of_a_call_is_reported() -> None:
    access, principal = control({"Effect": "Allow", "Action": "dynamodb:BatchGetItem", "Resource": TABLE})
    call = dynamodb("BatchGetItem", {"RequestItems": {"links": {"Keys": []}, "jobs": {"Keys": []}}})
    refusal = access.authorise(principal, call)
    assert refusal is not None
    assert refusal.access.resource == f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/jobs"
    assert refusal.answer().status == 400


def test_a_presigned_url_carries_the_permissions_of_its_signer() -> None:
    # Given a function allowed to put uploads only, and the signer read from a presigned URL
    access, principal = control(
        {"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/uploads/*"}
    )
    query = (
        f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={principal.access_key}%2F20261123%2F{REGION}"
        "%2Fs3%2Faws4_request&X-Amz-Signature=abc"
    )
    signature = Signature.presigned(query)
    assert signature == Signature(principal.access_key, REGION, "s3")
    # Then its PUT of an upload is allowed, a GET of the same object is refused as S3 refuses
    put = parse_call(
        "s3", {}, b"", query=query, path="/b/uploads/a.csv", method="PUT", region=REGION, account=ACCOUNT
    )
    assert access.authorise(principal, put) is None
    get = parse_call(
        "s3", {}, b"", query=query, path="/b/uploads/a.csv", method="GET", region=REGION, account=ACCOUNT
    )
    refusal = access.authorise(principal, get)
    assert refusal is not None and refusal.answer().status == 403
    # And a request that is not presigned has no signer there
    assert Signature.presigned("list-type=2") is None
