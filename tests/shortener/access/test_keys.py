"""API keys: the authorizer's verdicts and the policy it answers with, and making, listing and
revoking keys (against fakes of the keys table and the usage plan)."""

from datetime import UTC, datetime

import pytest

from shortener.access.keys import (
    KeyManager,
    MethodArn,
    authorize,
    key_hash,
    key_id_of,
    new_key,
)
from shortener.access.model import ApiKey
from shortener.exceptions import InvalidKeyRequestError, KeyNotFoundError

ARN = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/POST/"
STAGE = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod"
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


class FakeKeys:
    """The keys table, in a dict."""

    def __init__(self) -> None:
        self.records: dict[str, ApiKey] = {}
        self.reads = 0

    def get_key(self, key_id: str) -> ApiKey | None:
        self.reads += 1
        return self.records.get(key_id)

    def put_new(self, record: ApiKey) -> None:
        assert record.key_id not in self.records
        self.records[record.key_id] = record

    def list_keys(self) -> list[ApiKey]:
        return list(self.records.values())

    def mark_revoked(self, key_id: str, at: datetime) -> ApiKey:
        record = self.records[key_id].model_copy(update={"revoked": True, "revoked_at": at})
        self.records[key_id] = record
        return record


class FakePlan:
    """API Gateway's usage plan keys and authorizer cache, recorded in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.enabled: set[str] = set()

    def add_key(self, name: str, usage_key: str) -> None:
        self.calls.append(("add", name))
        self.enabled.add(usage_key)

    def has_key(self, usage_key: str) -> bool:
        return usage_key in self.enabled

    def disable_key(self, name: str, usage_key: str) -> None:
        self.calls.append(("disable", name))
        self.enabled.discard(usage_key)

    def flush_authorizer_cache(self) -> None:
        self.calls.append(("flush",))


def stored_key(keys: FakeKeys, *, role: str = "member", revoked: bool = False) -> str:
    key_id, key = new_key()
    keys.records[key_id] = ApiKey(
        key_id=key_id,
        key_hash=key_hash(key),
        name="ci",
        owner_id="team-a",
        role=role,  # type: ignore[arg-type]
        created_at=NOW,
        usage_key="usage-" + key_id,
        revoked=revoked,
    )
    return key


def statement(response: dict) -> dict:
    (only,) = response["policyDocument"]["Statement"]
    return only


def test_keys_have_their_id_inside_and_are_stored_only_as_a_hash() -> None:
    key_id, key = new_key()
    assert key.startswith(f"shk_{key_id}_")
    assert key_id_of(key) == key_id
    assert key_hash(key) != key and len(key_hash(key)) == 64
    assert new_key()[1] != key


@pytest.mark.parametrize("garbage", ["", "shk_", "shk_xyz_abc", "Bearer x", "shk_" + "0" * 12 + "_short"])
def test_malformed_keys_have_no_id(garbage: str) -> None:
    assert key_id_of(garbage) is None


def test_a_valid_key_is_allowed_on_the_whole_stage_with_its_caller_and_usage_key() -> None:
    # Given a stored member key
    keys = FakeKeys()
    key = stored_key(keys)
    key_id = key_id_of(key)
    # When the authorizer judges a request that presents it
    response = authorize(key, ARN, keys, access="keys").response()
    # Then the policy allows every method of the stage (API Gateway caches it per key and
    # evaluates it for the key's next calls to other methods)
    assert statement(response) == {
        "Action": "execute-api:Invoke",
        "Effect": "Allow",
        "Resource": [f"{STAGE}/*"],
    }
    # And the API function learns who calls, and the usage plan which key to meter
    assert response["principalId"] == key_id
    assert response["context"] == {
        "owner_id": "team-a",
        "role": "member",
        "key_id": key_id,
        "key_name": "ci",
        "domains": "",
    }
    assert response["usageIdentifierKey"] == f"usage-{key_id}"


@pytest.mark.parametrize("case", ["missing", "malformed", "unknown", "wrong secret", "revoked"])
def test_no_key_a_wrong_key_or_a_revoked_key_is_denied_everywhere(case: str) -> None:
    keys = FakeKeys()
    key = stored_key(keys, revoked=case == "revoked")
    presented = {
        "missing": None,
        "malformed": "let-me-in",
        "unknown": new_key()[1],
        "wrong secret": key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB"),
        "revoked": key,
    }[case]
    decision = authorize(presented, ARN, keys, access="keys")
    response = decision.response()
    assert not decision.allow
    assert statement(response)["Effect"] == "Deny"
    assert statement(response)["Resource"] == [f"{STAGE}/*"]
    # A denied caller gets no caller context, only why (API Gateway's 403 says it), and is
    # metered to no key
    assert response["context"] == {
        "refusal": "invalid_api_key",
        "refusal_message": "The API key in X-Api-Key is not valid, or it was revoked.",
    }
    assert "usageIdentifierKey" not in response


def test_a_malformed_key_is_refused_without_reading_the_table() -> None:
    keys = FakeKeys()
    authorize("x" * 40, ARN, keys, access="keys")
    assert keys.reads == 0


def test_open_access_lets_a_caller_without_a_key_shorten_as_anonymous() -> None:
    # Given a stack with Access=open
    keys = FakeKeys()
    # When a request comes without a key
    response = authorize(None, ARN, keys, access="open", anonymous_usage_key="anon-usage").response()
    # Then it is allowed as the anonymous caller, on the shortening routes only, metered together
    assert statement(response)["Effect"] == "Allow"
    assert statement(response)["Resource"] == [
        f"{STAGE}/POST/",
        f"{STAGE}/POST/bulk",
        f"{STAGE}/POST/bulk/*",
        f"{STAGE}/GET/jobs/*",
    ]
    assert response["context"]["owner_id"] == "anonymous"
    assert response["context"]["role"] == "anonymous"
    assert response["usageIdentifierKey"] == "anon-usage"
    # And a keyed route it is not allowed on is refused as missing a key, not as a wrong one
    assert response["context"]["refusal"] == "missing_api_key"
    assert keys.reads == 0


def test_open_access_still_judges_a_key_that_is_sent() -> None:
    keys = FakeKeys()
    key = stored_key(keys, role="admin")
    assert authorize(key, ARN, keys, access="open").response()["context"]["role"] == "admin"
    assert not authorize("shk_typo", ARN, keys, access="open").allow


def test_method_arns_are_parsed_and_rebuilt() -> None:
    arn = MethodArn.parse("arn:aws:execute-api:eu-west-1:1:api/dev/GET/jobs/j1/results")
    assert (arn.api_id, arn.stage, arn.rest) == ("api", "dev", "GET/jobs/j1/results")
    assert arn.stage_resource("GET/jobs/*") == "arn:aws:execute-api:eu-west-1:1:api/dev/GET/jobs/*"
    with pytest.raises(ValueError, match="method ARN"):
        MethodArn.parse("arn:aws:lambda:us-east-1:1:function:f")


def test_creating_a_key_meters_it_before_it_can_be_used() -> None:
    # Given empty keys and a usage plan
    keys, plan = FakeKeys(), FakePlan()
    manager = KeyManager(keys, plan, name_prefix="stk", now=lambda: NOW)
    # When a key is created
    created = manager.create("ci", "team-a", "admin")
    # Then the key is shown once, stored only as its hash, and joined the usage plan first
    record = keys.records[created.record.key_id]
    assert created.key not in record.model_dump_json()
    assert record.key_hash == key_hash(created.key)
    assert (record.name, record.owner_id, record.role, record.created_at) == ("ci", "team-a", "admin", NOW)
    assert plan.calls == [("add", f"stk-{record.key_id}")]
    assert manager.is_active(created.key)
    assert authorize(created.key, ARN, keys, access="keys").allow


@pytest.mark.parametrize(
    ("name", "owner", "role"),
    [
        ("", "o", "member"),
        ("n", "", "member"),
        ("n", "a b", "member"),
        ("n", "o", "root"),
        ("n", "anonymous", "member"),
    ],
)
def test_a_bad_key_request_is_refused_and_nothing_is_made(name: str, owner: str, role: str) -> None:
    keys, plan = FakeKeys(), FakePlan()
    with pytest.raises(InvalidKeyRequestError):
        KeyManager(keys, plan, name_prefix="stk").create(name, owner, role)
    assert not keys.records
    assert not plan.calls


def test_revoking_a_key_denies_it_and_flushes_the_authorizer_cache_before_disabling() -> None:
    # Given a key in use
    keys, plan = FakeKeys(), FakePlan()
    manager = KeyManager(keys, plan, name_prefix="stk", now=lambda: NOW)
    created = manager.create("ci", "team-a")
    # When it is revoked
    record = manager.revoke(created.record.key_id)
    # Then the record says so, cached answers are flushed, and its usage plan entry is disabled
    assert record.revoked and record.revoked_at == NOW
    assert plan.calls[1:] == [("flush",), ("disable", f"stk-{record.key_id}")]
    assert not authorize(created.key, ARN, keys, access="keys").allow
    assert not manager.is_active(created.key)
    # And it is still listed, as revoked
    assert [(key.key_id, key.revoked) for key in manager.list()] == [(record.key_id, True)]


def test_revoking_an_unknown_key_says_so() -> None:
    keys, plan = FakeKeys(), FakePlan()
    with pytest.raises(KeyNotFoundError):
        KeyManager(keys, plan, name_prefix="stk").revoke("000000000000")
    assert not plan.calls


def test_keys_are_listed_newest_first() -> None:
    keys, plan = FakeKeys(), FakePlan()
    times = iter([datetime(2025, 1, day, tzinfo=UTC) for day in (1, 3, 2)])
    manager = KeyManager(keys, plan, name_prefix="stk", now=lambda: next(times))
    for name in ("a", "b", "c"):
        manager.create(name, "o")
    assert [key.name for key in manager.list()] == ["b", "c", "a"]
