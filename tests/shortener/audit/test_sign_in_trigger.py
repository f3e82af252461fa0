"""The sign-in audit function under moto: Cognito's post-authentication event in, the event back
unchanged and a ``user.signed_in`` entry in the audit table; a write that fails is logged and
counted, and the sign-in still goes on (the event comes back, no error)."""

from datetime import UTC, datetime, timedelta
from types import ModuleType

import pytest

from shortener import settings
from shortener.audit.store import AuditSelection, AuditStore
from shortener.services import sign_in_audit
from tests.support.cognito import post_authentication_event
from tests.support.lambda_context import FakeLambdaContext
from tests.support.metrics import emitted

pytestmark = pytest.mark.integration


@pytest.fixture
def trigger(tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "sign-in-audit")
    from functions.sign_in_audit import app

    # The container-wide Metrics may have been created before the test environment existed.
    monkeypatch.setattr(app.metrics, "namespace", "BulkShortenerTests")
    return app


def entries(table: str) -> list[dict]:
    now = datetime.now(UTC)
    found, _ = AuditStore(table).page(AuditSelection(now - timedelta(hours=1), now + timedelta(hours=1)), 10)
    return [entry.model_dump(mode="json") for entry in found]


def test_a_sign_in_is_in_the_audit_table_and_cognito_gets_its_event_back(
    trigger: ModuleType, tables: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given Cognito's event for ada's sign-in
    event = post_authentication_event()
    # When the trigger runs
    answer = trigger.lambda_handler(event, FakeLambdaContext(function_name="sign-in-audit"))
    # Then Cognito gets its event back, and the audit log has her sign-in
    assert answer == post_authentication_event()
    [entry] = entries(tables["AUDIT_TABLE"])
    assert (entry["actor"], entry["action"], entry["target"]) == (
        "ada@example.com",
        "user.signed_in",
        "ada@example.com",
    )
    assert entry["after"]["sub"] == "9a5f2c1e-0b7d-4c8e-9f21-3d4e5f6a7b8c"
    assert emitted(capsys.readouterr().out)["SignInsRecorded"][0] == 1


def test_a_failed_write_is_logged_and_counted_and_the_sign_in_goes_on(
    trigger: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an audit table that does not exist (DynamoDB refuses the write)
    monkeypatch.setenv("AUDIT_TABLE", "no-such-table")
    settings.sign_in_audit_settings.cache_clear()
    sign_in_audit.sign_in_audit.cache_clear()
    logged: list[tuple[str, dict]] = []
    monkeypatch.setattr(trigger.logger, "exception", lambda message, **kw: logged.append((message, kw)))
    # When ada signs in
    answer = trigger.lambda_handler(
        post_authentication_event(), FakeLambdaContext(function_name="sign-in-audit")
    )
    # Then her sign-in goes on (the event comes back, no error), and the failure is logged and counted
    assert answer == post_authentication_event()
    assert logged == [("A sign-in was not recorded in the audit log", {"extra": {"user": "ada@example.com"}})]
    values = emitted(capsys.readouterr().out)
    assert values["SignInAuditWritesFailed"][0] == 1
    assert "SignInsRecorded" not in values
