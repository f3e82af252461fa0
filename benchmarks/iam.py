"""What IAM enforcement costs the local stack per AWS request: the time to read a function's request
and decide it against the function's role from template.yaml, for the calls bulk work makes most.

    python -m benchmarks iam [--repeat 2000]

Each figure is the mean over --repeat decisions of the full path the embedded AWS's middleware runs
(parse the body, map it to IAM accesses, evaluate; decisions are cached per action and resource,
as in the running stack), beside the time of json.loads of the same body alone, which moto spends
on every request anyway. A moto request costs milliseconds.
"""

import argparse
import json
import time
from typing import Any

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import template_resources
from local_stack.iam import AccessControl, function_principals
from local_stack.iam.calls import parse_call

STACK, REGION = "bench", "us-east-1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2000, help="decisions per figure")
    options = parser.parse_args()

    resources = template_resources(STACK, REGION, "http://127.0.0.1:1")
    access = AccessControl()
    principals = function_principals(resources).by_access_key
    access.load(principals)
    poller = next(p for p in principals.values() if p.function_name.endswith("-poller"))
    links = resources.physical_id("LinksTable")
    queue = resources.physical_id("BulkQueue")
    item = {
        "code": {"S": "abcd"},
        "url": {"S": "https://example.com/" + "x" * 60},
        "created_at": {"S": "now"},
    }
    calls: dict[str, tuple[str, str, dict[str, Any]]] = {
        "GetItem": (
            "dynamodb",
            "DynamoDB_20120810.GetItem",
            {"TableName": links, "Key": {"code": {"S": "a"}}},
        ),
        "BatchWriteItem (25 links)": (
            "dynamodb",
            "DynamoDB_20120810.BatchWriteItem",
            {"RequestItems": {links: [{"PutRequest": {"Item": item}}] * 25}},
        ),
        "TransactWriteItems (100 claims)": (
            "dynamodb",
            "DynamoDB_20120810.TransactWriteItems",
            {"TransactItems": [{"Put": {"TableName": links, "Item": item}}] * 100},
        ),
        "DeleteMessageBatch (10)": (
            "sqs",
            "AmazonSQS.DeleteMessageBatch",
            {"QueueUrl": queue, "Entries": [{"Id": str(n), "ReceiptHandle": "h" * 200} for n in range(10)]},
        ),
    }
    print(f"IAM decision per request, {options.repeat} each (poller's role, {ACCOUNT_ID}):")
    for name, (service, target, body) in calls.items():
        raw = json.dumps(body).encode()
        started = time.perf_counter()
        for _ in range(options.repeat):
            call = parse_call(service, {"x-amz-target": target}, raw, region=REGION, account=ACCOUNT_ID)
            refusal = access.authorise(poller, call)
        elapsed = (time.perf_counter() - started) / options.repeat
        started = time.perf_counter()
        for _ in range(options.repeat):
            json.loads(raw)
        parsing = (time.perf_counter() - started) / options.repeat
        verdict = "allowed" if refusal is None else "refused"
        print(
            f"  {name:<34} {elapsed * 1e6:8.1f} us, json.loads alone {parsing * 1e6:7.1f} us"
            f"  ({len(raw):,} bytes, {verdict})"
        )


if __name__ == "__main__":
    main()
