"""The restarter's metrics that the operations dashboard and alarms read (template.yaml)."""

import json

import boto3
import pytest

from tests.support.alarms import QUEUE_NAME
from tests.support.loops import FUNCTION_NAME, LambdaContext, RecordingStarter
from tests.support.metrics import emitted

pytestmark = pytest.mark.integration


def test_each_run_reports_the_loops_running(
    tables: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a restarter with a minimum of two loops and no loop yet
    boto3.client("sqs").create_queue(QueueName=QUEUE_NAME)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "restarter")
    monkeypatch.setenv("LOOP_FUNCTIONS", json.dumps({QUEUE_NAME: FUNCTION_NAME}))
    monkeypatch.setenv("MIN_LOOPS", "2")
    monkeypatch.setenv("MAX_LOOPS", "4")
    monkeypatch.setenv("MESSAGES_PER_LOOP", "10")
    monkeypatch.setenv("STALE_HEARTBEAT_SECONDS", "180")
    from functions.restarter import app
    from shortener.services import restarter as services

    # The Metrics object outlives a test: give it the service the function's environment names
    monkeypatch.setattr(app.metrics, "service", "restarter")
    services.tokens.cache_clear()
    services.scaler.cache_clear()
    services.scaler().starter = RecordingStarter()  # moto runs no Lambda code
    # When the scheduled run starts the minimum
    app.lambda_handler({"source": "aws.events"}, LambdaContext("restarter"))
    # Then it reports two loops running and none revived, under the one dimension the alarms and the
    # dashboard name: "service" (Powertools' default dimension)
    values = emitted(capsys.readouterr().out)
    assert values["LoopsRunning"] == (2, [["service"]])
    assert values["LoopsRevived"] == (0, [["service"]])
