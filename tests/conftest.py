"""Fixtures shared by every test layer: moto with tables made from template.yaml, settings, the API
function under moto, and the local stack's embedded AWS.

Tests live by what they test (the shortener's domains, the local stack's services, the CLI, the
tooling), and each test module says its tier: a module that starts servers or talks to moto carries
``pytestmark = pytest.mark.integration``; one with no tier marker is a unit test; the end-to-end tests
against a running stack stay in tests/e2e. ``make unit`` runs ``-m "not integration"``, ``make
integration`` runs ``-m integration``."""

import os

# Set before anything imports the layer (this module's own imports too): Metrics() and Tracer()
# read these when they are created.
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "BulkShortenerTests")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import freezegun
import hypothesis
import pytest
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

from local_stack.cloudformation.template import create_table_arguments
from local_stack.embedded.server import EmbeddedAws
from local_stack.patches import install_moto_fixes
from shortener import aws as aws_clients
from shortener import settings
from shortener.links.codes import code_generator
from shortener.services import api as api_services
from shortener.services import collector as collector_services
from shortener.services import links as link_services
from shortener.services import sign_in_audit as sign_in_audit_services
from shortener.services import webhooks as webhook_services
from shortener.services import worker as worker_services

# Powertools' parser defines pydantic models lazily; under a frozen clock pydantic would meet
# freezegun's fake datetime class in their annotations.
freezegun.configure(extend_ignore_list=["aws_lambda_powertools.utilities.parser"])

# Hypothesis fails an example slower than 200 ms: a timed assertion, which a loaded 2-core machine
# (several suites at once) breaks for code that is right. Examples are still bounded in number.
hypothesis.settings.register_profile("project", deadline=None)
# In CI (every CI service sets CI; .ci/run does too) the examples are derived from each test's
# name, not drawn at random, and no example database is kept: a run gives the same examples as
# the run before it, so a failure is reproduced by running again, and the blob to replay it is
# printed. HYPOTHESIS_PROFILE picks a profile by name.
hypothesis.settings.register_profile(
    "ci", parent=hypothesis.settings.get_profile("project"), derandomize=True, database=None, print_blob=True
)
hypothesis.settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "project")
)

# In-process moto behaves as the local stack's embedded AWS does, whichever test runs first (the
# fixes patch moto's classes, once): SQS depth counts read at one moment, item-level rollback.
install_moto_fixes()

TABLES = {
    "LINKS_TABLE": "LinksTable",
    "JOBS_TABLE": "JobsTable",
    "TOKENS_TABLE": "TokensTable",
    "BLOCKLIST_TABLE": "BlocklistTable",
    "CLICKS_TABLE": "ClicksTable",
    "AUDIT_TABLE": "AuditTable",
    "WEBHOOKS_TABLE": "WebhooksTable",
}


def _clear_container_caches() -> None:
    aws_clients.reset_clients()
    for getter in (
        settings.api_settings,
        settings.poller_settings,
        settings.worker_settings,
        settings.scaler_settings,
        settings.restarter_settings,
        settings.collector_settings,
        settings.webhook_sender_settings,
        settings.sign_in_audit_settings,
    ):
        getter.cache_clear()
    collector_services.click_collector.cache_clear()
    for service in (
        api_services.job_queries,
        api_services.job_submissions,
        api_services.click_reports,
        api_services._jobs_worker,
        api_services._work_loops,
        api_services._click_counters,
        api_services._click_events,
    ):
        # A test may have put a plain function in a builder's place (monkeypatch undoes it later).
        getattr(service, "cache_clear", lambda: None)()
    code_generator.cache_clear()
    api_services.api_links.cache_clear()
    api_services.api_link_manager.cache_clear()
    api_services.api_password_gate.cache_clear()
    api_services.api_bulk_links.cache_clear()
    api_services.api_takedowns.cache_clear()
    api_services._api_edge.cache_clear()
    api_services.api_batches.cache_clear()
    api_services.api_announcer.cache_clear()
    api_services.api_webhooks.cache_clear()
    webhook_services.webhook_sender.cache_clear()
    sign_in_audit_services.sign_in_audit.cache_clear()
    worker_services.batch_runner.cache_clear()
    link_services._snapshot.cache_clear()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials, one region, and no endpoint override: boto3 talks to moto only."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ENDPOINT_URL_SQS",
        "AWS_ENDPOINT_URL_LAMBDA",
        "AWS_ENDPOINT_URL_S3",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "BulkShortenerTests")
    monkeypatch.setenv("POWERTOOLS_DEV", "false")


@pytest.fixture
def atomic_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make each mocked AWS request atomic, as each DynamoDB request is on AWS. moto itself does
    not serialise requests, so without this a conditional write racing another thread could pass
    its condition check inside moto, and a concurrency test would test moto rather than our code."""
    lock = threading.RLock()
    process_request = BotocoreStubber.process_request

    def atomic_process_request(self: BotocoreStubber, request: Any) -> Any:
        # Only DynamoDB: an SQS long poll holding the lock would stall every other thread.
        target = request.headers.get("X-Amz-Target") or b""
        if not (target.decode() if isinstance(target, bytes) else target).startswith("DynamoDB"):
            return process_request(self, request)
        with lock:
            return process_request(self, request)

    monkeypatch.setattr(BotocoreStubber, "process_request", atomic_process_request)


@pytest.fixture
def moto(aws_env: None, atomic_requests: None) -> Iterator[None]:
    """An in-process moto (mock_aws) for the test."""
    with mock_aws():
        _clear_container_caches()
        yield
    _clear_container_caches()


@pytest.fixture
def tables(moto: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The template's tables created in moto; their names are in the environment, as in Lambda."""
    client = boto3.client("dynamodb")
    names = {}
    for variable, logical_id in TABLES.items():
        name = f"test-{logical_id}"
        client.create_table(**create_table_arguments(logical_id, name))
        monkeypatch.setenv(variable, name)
        names[variable] = name
    _clear_container_caches()
    return names


@pytest.fixture
def api(tables: dict[str, str]) -> ModuleType:
    """The API function's module, with its per-container caches emptied."""
    from functions.api import app

    app.links.cache_clear()
    app.app_site_associations.cache_clear()
    return app


@pytest.fixture(scope="module")
def aws() -> Iterator[EmbeddedAws]:
    """The local stack's embedded AWS on a free loopback port, shared by a module's tests."""
    server = EmbeddedAws(0)
    server.start()
    yield server
    server.stop()
