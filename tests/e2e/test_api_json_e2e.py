"""The API that programs build on, end to end on one local stack: the OpenAPI document, bulk in
JSON, and the job-ended event."""

import json
import time

from shortener.jobs.events_model import DETAIL_TYPE, SOURCE
from tests.e2e.conftest import RunningStack, StartStack


def test_openapi_document_is_public_and_names_the_stage_url(stack: RunningStack) -> None:
    # Given a running stack
    # When the document is fetched without a key
    answer = stack.request("GET", "openapi.json", api_key=None)
    # Then it is the OpenAPI 3.1 document, with the stage's URL as its server
    assert answer.status == 200, answer.text
    spec = answer.json()
    assert spec["openapi"].startswith("3.1")
    assert spec["servers"] == [{"url": stack.api_url.rstrip("/") + "/"}]
    assert spec["paths"]["/links/{code}"]["patch"]["security"] == [{"apiKey": []}]


def test_three_hundred_json_links_come_back_in_input_order(stack: RunningStack) -> None:
    # Given a custom code already taken by another URL
    taken = stack.post_json("", {"url": "https://example.com/other", "code": "e2e-taken"})
    assert taken.status in (200, 201), taken.text
    # And 300 links: one invalid URL, one asking for the taken code, one repeating an earlier URL
    links: list[dict[str, str]] = [{"url": f"https://example.com/json/{n}"} for n in range(300)]
    links[17] = {"url": "not a url"}
    links[123] = {"url": "https://example.com/json/123", "code": "e2e-taken"}
    links[250] = {"url": "https://example.com/json/40"}
    # When they are sent in one call
    answer = stack.post_json("links/bulk", {"links": links})
    # Then each has its outcome, in input order
    assert answer.status == 200, answer.text
    found = answer.json()["links"]
    assert len(found) == 300
    assert found[17]["status"] in (400, 422) and found[17]["error"] == "invalid_url"
    assert (found[123]["status"], found[123]["error"]) == (409, "code_taken")
    assert found[250]["code"] == found[40]["code"] and found[250]["status"] == 200
    others = [outcome for n, outcome in enumerate(found) if n not in (17, 123, 250)]
    assert {outcome["status"] for outcome in others} == {201}
    assert [outcome["url"] for outcome in others] == [
        f"https://example.com/json/{n}" for n in range(300) if n not in (17, 123, 250)
    ]
    # And a new code redirects to its URL
    followed = stack.request("GET", found[0]["code"], api_key=None)
    assert (followed.status, followed.headers["Location"]) == (301, "https://example.com/json/0")


def test_one_thousand_and_one_json_links_are_413(stack: RunningStack) -> None:
    answer = stack.post_json(
        "links/bulk", {"links": [{"url": f"https://example.com/{n}"} for n in range(1001)]}
    )
    assert answer.status == 413, answer.text
    assert answer.json()["error"] == "payload_too_large"


def test_a_jobs_end_event_reaches_a_local_rules_queue(stack: RunningStack) -> None:
    # Given a rule on the default bus for job-ended events, with a queue as its target
    sqs = stack.boto3_client("sqs")
    queue_url = sqs.create_queue(QueueName="e2e-job-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events = stack.boto3_client("events")
    pattern = {"source": [SOURCE], "detail-type": [DETAIL_TYPE]}
    events.put_rule(Name="e2e-jobs-ended", EventPattern=json.dumps(pattern))
    events.put_targets(Rule="e2e-jobs-ended", Targets=[{"Id": "queue", "Arn": queue_arn}])
    # When a job of three rows (one invalid) is uploaded and runs to its end
    text = "url\nhttps://example.com/ev/1\nhttps://example.com/ev/2\nnot a url\n"
    accepted = stack.request("POST", "bulk", text, {"Content-Type": "text/csv"}).json()
    # Then the queue receives the job's event: its id, owner, totals and where its results are
    deadline = time.monotonic() + 60
    received: list[dict] = []
    while not received and time.monotonic() < deadline:
        received = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=2).get("Messages", [])
    assert received, "no job-ended event arrived within 60 s"
    event = json.loads(received[0]["Body"])
    assert (event["source"], event["detail-type"]) == (SOURCE, DETAIL_TYPE)
    detail = event["detail"]
    assert detail["job_id"] == accepted["job_id"]
    assert (detail["status"], detail["total"], detail["succeeded"], detail["failed"]) == ("done", 3, 2, 1)
    assert detail["owner"]
    assert detail["results"]["results_url"] == accepted["status_url"] + "/results"
    # And the results are ready when the event arrives
    assert stack.request("GET", f"jobs/{accepted['job_id']}").json()["status"] == "done"


def test_a_job_that_names_a_topic_gets_its_end_message_there(start_stack: StartStack) -> None:
    # Given a stack that allows job topics, and a topic of it with a queue subscribed
    stack = start_stack(params={"AllowJobTopics": "true"})
    sqs = stack.boto3_client("sqs")
    queue_url = sqs.create_queue(QueueName="e2e-topic-subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns = stack.boto3_client("sns")
    topic = sns.create_topic(Name="e2e-jobs-done")["TopicArn"]
    sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"}
    )
    # When a job naming it runs to its end
    text = "url\nhttps://example.com/topic/1\n"
    accepted = stack.request("POST", f"bulk?notify_topic={topic}", text, {"Content-Type": "text/csv"}).json()
    # Then the topic's subscriber gets the job-ended message
    deadline = time.monotonic() + 60
    received: list[dict] = []
    while not received and time.monotonic() < deadline:
        received = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=2).get("Messages", [])
    assert received, "no job-ended message arrived within 60 s:\n" + stack.log()[-3000:]
    message = json.loads(received[0]["Body"])
    assert message["detail-type"] == DETAIL_TYPE
    assert (message["detail"]["job_id"], message["detail"]["total"]) == (accepted["job_id"], 1)


def test_starting_prints_no_warning_that_is_not_about_the_users_stack(stack: RunningStack) -> None:
    # Given what the stack printed up to READY (make run shows the same)
    started = stack.log().split("READY ", 1)[0]
    # Then no warning line: not the SAM translator's feature toggles, not one per alarm
    assert [line for line in started.splitlines() if " WARNING " in line] == []
    # And the alarms that are not evaluated locally are named once, in the banner, in words
    assert started.count("not evaluated here") == 1
    assert "FunctionErrorsAlarm" in started.split("Alarms: ", 1)[1].splitlines()[0]


def test_every_answer_says_nosniff_the_gateways_own_too(stack: RunningStack) -> None:
    answers = {
        "page": stack.request("GET", "", api_key=None),
        "no key (gateway)": stack.post_json("", {"url": "https://example.com/"}, api_key=None),
        "no route (gateway)": stack.request("GET", "no/such/route", api_key=None),
        "bad request (function)": stack.post_json("", {"url": "not a url"}),
    }
    assert {
        name: answer.headers.get("X-Content-Type-Options") for name, answer in answers.items()
    } == dict.fromkeys(answers, "nosniff")
    policy = answers["page"].headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'sha256-" in policy
    assert answers["page"].headers["Referrer-Policy"] == "strict-origin-when-cross-origin"
