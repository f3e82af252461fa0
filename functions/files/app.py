"""The files function: an uploaded file's S3 event (or a split handed over by the invocation
before) -> its rows read into the queue; a complete job -> its results file written once; a done
job's QR labels -> their ZIP. The rules live in shortener.jobs.split, shortener.jobs.results
and shortener.jobs.labels."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.jobs.tasks_model import FilesTask, LabelsRequest, S3Event, SplitRequest
from shortener.observability import logger, metrics, tracer
from shortener.services.files import (
    batch_runner,
    click_report_writer,
    labels_writer,
    results_writer,
    splitter,
)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    def seconds_left() -> float:
        return context.get_remaining_time_in_millis() / 1000

    if "Records" in event:
        requests = [record.split_request() for record in S3Event.model_validate(event).Records]
        return {"splits": [split(request, context, seconds_left) for request in requests if request]}
    task = FilesTask.model_validate(event)
    answer: dict[str, Any] = {}
    if task.split is not None:
        answer["splits"] = [split(task.split, context, seconds_left)]
    if task.write_click_report is not None:
        answer["click_report"] = click_report_writer().write(task.write_click_report)
    if task.write_results is not None:
        written = results_writer().write(task.write_results, owner=context.aws_request_id)
        answer["results"] = written.model_dump(mode="json") if written else None
    if task.run_batch is not None:
        outcome = batch_runner().run(task.run_batch, context.aws_request_id, seconds_left)
        logger.info("Batch", extra={"batch_id": task.run_batch, "outcome": outcome})
        answer["batch"] = outcome
    if task.write_labels is not None:
        answer["labels"] = labels(task.write_labels, context, seconds_left)
    return answer


def split(request: SplitRequest, context: LambdaContext, seconds_left: Any) -> dict[str, Any]:
    report = splitter().split(request, context.aws_request_id, seconds_left)
    logger.info(
        "Split",
        extra={
            "job_id": request.job_id,
            "outcome": report.outcome,
            "rows": report.rows,
            "messages": report.messages,
        },
    )
    metrics.add_metric(name="RowsSplit", unit=MetricUnit.Count, value=report.rows)
    return {"job_id": request.job_id, "outcome": report.outcome, "rows": report.rows}


def labels(request: LabelsRequest, context: LambdaContext, seconds_left: Any) -> dict[str, Any]:
    report = labels_writer().write(request, context.aws_request_id, seconds_left)
    logger.info(
        "Labels",
        extra={
            "job_id": request.job_id,
            "outcome": report.outcome,
            "labels": report.labels,
            "parts": report.parts,
        },
    )
    return {"job_id": request.job_id, "outcome": report.outcome, "key": report.key, "labels": report.labels}
