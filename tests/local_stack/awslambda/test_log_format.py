"""The terminal of `make run`: the functions' output (Powertools JSON records, metric blobs, Python
warnings, tracebacks) rendered as short lines; raw JSON on request. The records and blobs are made
by Powertools itself, so the shapes are the ones the functions print."""

import io
import json
import logging
import uuid
import warnings
from collections.abc import Callable

import pytest
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from local_stack.awslambda.log_format import (
    OUTPUT_END,
    FunctionLogRenderer,
    FunctionOutput,
    Rendered,
    TerminalFormatter,
)

# As the restarter printed it on its first invocation (`make run`).
COLD_START_BLOB = (
    '{"_aws":{"Timestamp":1795385857420,"CloudWatchMetrics":[{"Namespace":"BulkShortener",'
    '"Dimensions":[["function_name","service"]],"Metrics":[{"Name":"ColdStart","Unit":"Count"}]}]},'
    '"function_name":"shortener-local-RestarterFunction","service":"restarter","ColdStart":[1.0]}'
)


def powertools_lines(write: Callable[[Logger], None]) -> list[str]:
    """What a Powertools Logger prints for ``write`` (a fresh service each time: Powertools keeps
    one handler per service name)."""
    stream = io.StringIO()
    write(Logger(service=f"log-format-{uuid.uuid4().hex}", stream=stream))
    return stream.getvalue().splitlines()


def emf_blob(capsys: pytest.CaptureFixture[str], values: dict[str, float]) -> str:
    """The metric blob Powertools prints when it flushes ``values``."""
    metrics = Metrics(namespace="LogFormatTest", service="poller")
    for name, value in values.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    capsys.readouterr()
    metrics.flush_metrics()
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return line


def test_a_log_record_is_its_message_and_the_keys_the_code_added() -> None:
    # Given a record with the keys Powertools adds and a few of the code's own
    [line] = powertools_lines(
        lambda logger: logger.info(
            "Scaling outcome",
            extra={"action": "add", "loops_after": 2, "reason": "transition OK -> ALARM", "stopped": []},
        )
    )
    assert "timestamp" in json.loads(line)
    # Then one line: the message, then the code's keys (empty ones left out, spaced ones quoted)
    rendered = FunctionLogRenderer().render(line)
    assert rendered == Rendered(
        logging.INFO, 'Scaling outcome  action=add loops_after=2 reason="transition OK -> ALARM"'
    )


def test_lists_are_compact_json_and_long_values_are_cut() -> None:
    [line] = powertools_lines(
        lambda logger: logger.warning("Loops", extra={"revived": ["slot-000"], "detail": "x" * 200})
    )
    rendered = FunctionLogRenderer().render(line)
    assert rendered is not None
    assert rendered.level == logging.WARNING
    assert 'revived=["slot-000"]' in rendered.text
    assert "detail=" + "x" * 79 + "…" in rendered.text


def test_an_exception_record_shows_its_traceback_below_the_line() -> None:
    def log_exception(logger: Logger) -> None:
        try:
            raise ValueError("bad row")
        except ValueError:
            logger.exception("Message failed; it will be redelivered", extra={"receives": 2})

    [line] = powertools_lines(log_exception)
    rendered = FunctionLogRenderer().render(line)
    assert rendered is not None
    assert rendered.level == logging.ERROR
    first, *rest = rendered.text.splitlines()
    assert first == "Message failed; it will be redelivered  receives=2"
    assert rest[0] == "    Traceback (most recent call last):"
    assert rest[-1] == "    ValueError: bad row"


def test_a_metric_blob_of_background_work_is_one_line_of_what_moved(
    capsys: pytest.CaptureFixture[str],
) -> None:
    blob = emf_blob(capsys, {"RowsSucceeded": 250, "RowsFailed": 0, "ChunksProcessed": 1})
    assert json.loads(blob)["_aws"]["CloudWatchMetrics"]
    rendered = FunctionLogRenderer().render(blob)
    assert rendered == Rendered(logging.INFO, "metrics RowsSucceeded=250 ChunksProcessed=1")


def test_a_metric_blob_of_a_request_is_kept_to_debug(capsys: pytest.CaptureFixture[str]) -> None:
    # The API's request line already says a link was created
    renderer = FunctionLogRenderer()
    renderer.background = False
    rendered = renderer.render(emf_blob(capsys, {"LinksCreated": 1}))
    assert rendered == Rendered(logging.DEBUG, "metrics LinksCreated=1")


def test_metric_blobs_with_nothing_moved_are_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    renderer = FunctionLogRenderer()
    assert renderer.render(emf_blob(capsys, {"LoopsStarted": 0, "LoopsRevived": 0})) is None
    assert renderer.render(COLD_START_BLOB) is None


def test_a_python_warning_and_its_source_line_are_debug() -> None:
    # Given a warning as Python prints it to stderr, then an ordinary line
    printed = warnings.formatwarning("No application metrics to publish.", UserWarning, __file__, 12)
    lines = [*printed.splitlines(), "a print of the handler"]
    assert len(lines) == 3  # the warning, the source line it points at, the print
    # Then the warning is DEBUG, and the next line is shown as it is
    renderer = FunctionLogRenderer()
    rendered = [renderer.render(line) for line in lines]
    assert [r.level if r else None for r in rendered[:-1]] == [logging.DEBUG] * (len(lines) - 1)
    assert rendered[-1] == Rendered(logging.INFO, "a print of the handler")


def test_a_printed_traceback_is_an_error_to_its_last_line() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/var/task/app.py", line 3, in handler',
        "    raise ValueError('bad input')",
        "ValueError: bad input",
        "next",
    ]
    renderer = FunctionLogRenderer()
    rendered = [renderer.render(line) for line in lines]
    assert [r.level for r in rendered if r] == [logging.ERROR] * 4 + [logging.INFO]


def test_other_json_and_blank_lines() -> None:
    renderer = FunctionLogRenderer()
    assert renderer.render('{"hello": 1}\n') == Rendered(logging.INFO, '{"hello": 1}')
    assert renderer.render("   \n") is None


def test_json_format_passes_the_lines_through_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    raw = io.StringIO()
    output = FunctionOutput("PollerFunction", "json", raw)
    blob = emf_blob(capsys, {"RowsSucceeded": 3})
    output.write(blob + "\n")
    output.write("plain")
    assert raw.getvalue() == blob + "\nplain\n"


def test_human_format_logs_under_the_functions_logical_id(caplog: pytest.LogCaptureFixture) -> None:
    # Given the function's record rendered into the stack's log
    [line] = powertools_lines(lambda logger: logger.info("Loops healed and reconciled"))
    with caplog.at_level(logging.INFO):
        FunctionOutput("RestarterFunction", "human").write(line)
    [record] = [record for record in caplog.records if record.name.startswith("local_stack.")]
    # Then the terminal line names the function, its level and its message
    shown = TerminalFormatter().format(record)
    assert shown.split(" ", 1)[1] == "INFO  RestarterFunction  Loops healed and reconciled"


def test_the_stacks_own_lines_name_their_module() -> None:
    record = logging.LogRecord(
        "local_stack.apigateway.gateway", logging.INFO, __file__, 1, "POST / 201 5 ms", None, None
    )
    assert TerminalFormatter().format(record).split(" ", 1)[1] == "INFO  apigateway.gateway POST / 201 5 ms"


def test_an_invocations_output_is_read_to_its_end_before_its_answer_goes_out() -> None:
    # Given a function whose output goes to a subscribed log group, and an invocation that wrote a
    # line, then a last one without a newline, then its end
    kept: list[str] = []
    raw = io.StringIO()
    output = FunctionOutput("ApiFunction", "json", raw, sink=kept.append)
    assert not output.read_to_end("r1", 0.01)  # nothing read yet
    output.write('{"record":"destination","code":"abc"}\n')
    output.write(f"partial{OUTPUT_END}r1\n")
    # When the runtime waits for that invocation's output
    # Then it was all read: the log group holds both lines, and the end marker is not shown
    assert output.read_to_end("r1", 0.01)
    assert kept == ['{"record":"destination","code":"abc"}\n', "partial"]
    assert OUTPUT_END not in raw.getvalue()


def test_a_function_whose_output_no_group_keeps_is_never_waited_for() -> None:
    output = FunctionOutput("PollerFunction", "json", io.StringIO())
    output.write(f"{OUTPUT_END}r1\n")
    assert not output.kept
    assert not output.read_to_end("r1", 0.01)
