"""Asking the jobs worker for work with an asynchronous invoke: one typed task per invocation
(shortener.jobs.tasks_model.WorkerTask): continue a split in a fresh invocation, write a complete
job's results file, build a click report or a labels archive, run a batch, write a click export's
file. Lambda keeps an accepted event and retries a failed invocation twice; the work itself is
idempotent, so a duplicate only costs a little."""

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from shortener import aws
from shortener.clicks.export_files import ExportFileRequest
from shortener.jobs.tasks_model import (
    BatchTask,
    ClickErasureTask,
    ClickExportTask,
    ClickReportTask,
    LabelsRequest,
    ResultsTask,
    SplitRequest,
    WorkerTask,
)

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


class JobsWorker:
    """The jobs worker (the template's FilesFunction) by name. The client is created lazily unless
    one is passed."""

    def __init__(self, function_name: str, client: "LambdaClient | None" = None) -> None:
        self.function_name = function_name
        self._client = client

    @property
    def client(self) -> "LambdaClient":
        return self._client or aws.lambda_()

    def continue_split(self, request: SplitRequest) -> None:
        self._send(request)

    def request_results(self, job_id: str) -> None:
        self._send(ResultsTask(job_id=job_id))

    def request_click_report(self, job_id: str) -> None:
        self._send(ClickReportTask(job_id=job_id))

    def request_labels(self, request: LabelsRequest) -> None:
        self._send(request)

    def write_click_export(self, request: ExportFileRequest) -> None:
        self._send(ClickExportTask.of(request))

    def erase_clicks(
        self, *, owner: str, erasure: str, codes: Sequence[str], before: datetime, after: str | None = None
    ) -> None:
        self._send(
            ClickErasureTask(owner=owner, erasure=erasure, codes=list(codes), before=before, after=after)
        )

    def run_batch(self, batch_id: str) -> None:
        self._send(BatchTask(batch_id=batch_id))

    def _send(self, task: WorkerTask) -> None:
        self.client.invoke(
            FunctionName=self.function_name,
            InvocationType="Event",
            Payload=json.dumps(task.model_dump(mode="json", exclude_none=True)).encode(),
        )
