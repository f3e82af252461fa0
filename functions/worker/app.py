"""The jobs worker (the template's FilesFunction): runs the background work of jobs, one handler
per kind of task. An uploaded file's S3 event (or a split handed over by the invocation before) ->
its rows read into the queue; a complete job -> its results file written once; a job's click
report file; a done job's QR labels -> their ZIP; a batch of link changes; a click export's file;
an erasure of click events; every hour, the compaction of the settled days' click events. The
rules live in shortener.jobs (split, results, click_reports, labels, batches) and shortener.clicks
(export_files, erasure, compaction); the tasks in shortener.jobs.tasks_model."""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.jobs.tasks_model import (
    BatchTask,
    ClickCompactionTask,
    ClickErasureTask,
    ClickExportTask,
    ClickReportTask,
    LabelsRequest,
    ResultsTask,
    SplitRequest,
    WorkerTask,
    worker_tasks,
)
from shortener.observability import logger, metrics, tracer
from shortener.services.worker import (
    batch_runner,
    click_export_writer,
    click_report_writer,
    event_compactor,
    event_eraser,
    labels_writer,
    results_writer,
    splitter,
)

SecondsLeft = Callable[[], float]


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    def seconds_left() -> float:
        return context.get_remaining_time_in_millis() / 1000

    # An S3 event answers its list of splits, even an empty one.
    answer: dict[str, Any] = {"splits": []} if "Records" in event else {}
    for task in worker_tasks(event):
        run(task, context, seconds_left, answer)
    return answer


def run(task: WorkerTask, context: LambdaContext, seconds_left: SecondsLeft, answer: dict[str, Any]) -> None:
    """Runs ``task`` with its own handler and files its outcome in ``answer``."""
    match task:
        case SplitRequest():
            answer.setdefault("splits", []).append(split(task, context, seconds_left))
        case ClickReportTask():
            answer["click_report"] = click_report_writer().write(task.job_id)
        case ResultsTask():
            answer["results"] = results(task, context)
        case BatchTask():
            answer["batch"] = batch(task, context, seconds_left)
        case LabelsRequest():
            answer["labels"] = labels(task, context, seconds_left)
        case ClickExportTask():
            answer["click_export"] = click_export(task)
        case ClickErasureTask():
            answer["click_erasure"] = click_erasure(task, seconds_left)
        case ClickCompactionTask():
            answer["click_compaction"] = click_compaction(task, seconds_left)


def split(request: SplitRequest, context: LambdaContext, seconds_left: SecondsLeft) -> dict[str, Any]:
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


def results(task: ResultsTask, context: LambdaContext) -> dict[str, Any] | None:
    written = results_writer().write(task.job_id, owner=context.aws_request_id)
    return written.model_dump(mode="json") if written else None


def batch(task: BatchTask, context: LambdaContext, seconds_left: SecondsLeft) -> Any:
    outcome = batch_runner().run(task.batch_id, context.aws_request_id, seconds_left)
    logger.info("Batch", extra={"batch_id": task.batch_id, "outcome": outcome})
    return outcome


def labels(request: LabelsRequest, context: LambdaContext, seconds_left: SecondsLeft) -> dict[str, Any]:
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


def click_export(task: ClickExportTask) -> dict[str, Any]:
    rows = click_export_writer().write(task.request())
    logger.info("Click export", extra={"export": task.export, "format": task.format, "rows": rows})
    return {"export": task.export, "key": task.key, "rows": rows}


def click_erasure(task: ClickErasureTask, seconds_left: SecondsLeft) -> dict[str, Any]:
    outcome = event_eraser().erase(
        owner=task.owner,
        erasure=task.erasure,
        codes=task.codes,
        before=task.before,
        after=task.after,
        seconds_left=seconds_left,
    )
    logger.info("Click erasure", extra={"erasure": task.erasure, **outcome.__dict__})
    return {"erasure": task.erasure, "outcome": outcome.outcome, "events_erased": outcome.erased}


def click_compaction(task: ClickCompactionTask, seconds_left: SecondsLeft) -> list[dict[str, Any]]:
    compactor = event_compactor()
    days = [compactor.compact_day(task.day)] if task.day else compactor.compact(seconds_left)
    for day in days:
        logger.info("Click compaction", extra={**day.__dict__, "day": day.day.isoformat()})
    return [{**day.__dict__, "day": day.day.isoformat()} for day in days]
