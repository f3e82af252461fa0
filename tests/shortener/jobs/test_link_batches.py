"""Changes in bulk through the API and files handlers under moto: POST /links/batch records a
batch and starts the jobs worker, which changes every selected link as PATCH/DELETE would;
GET /links/batch/{batch_id} reports counts and outcomes; a page is counted once however often it
runs; a batch whose worker crashed is started again and cannot stay "running" forever."""

import threading
import uuid
from http.server import ThreadingHTTPServer
from types import ModuleType
from typing import Any

import pytest

from shortener import clock
from shortener.jobs import batches as batch_logic
from shortener.jobs.batches_model import MAX_BATCH_CODES
from shortener.jobs.model import Job
from shortener.jobs.store import JobsStore
from shortener.jobs.store.batches import BatchStore
from shortener.links.store import LinksStore
from shortener.services import api as api_services
from shortener.services import worker as worker_services
from tests.support.api import ApiCaller, body
from tests.support.lambda_context import FakeLambdaContext

pytestmark = pytest.mark.integration


class StartedBatches:
    """Stands in for the jobs worker's asynchronous invoke: records what was started."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def run_batch(self, batch_id: str) -> None:
        self.started.append(batch_id)


@pytest.fixture
def started(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> StartedBatches:
    starter = StartedBatches()
    monkeypatch.setattr(api_services, "_jobs_worker", lambda: starter)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "test-files")
    return starter


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


@pytest.fixture
def bob(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "bob")


@pytest.fixture
def admin(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "ops", role="admin")


def start(caller: ApiCaller, payload: dict[str, Any]) -> dict[str, Any]:
    return caller.request("POST", "/links/batch", body=payload)


def run_files(batch_id: str, request_id: str = "run-1") -> Any:
    """The jobs worker's invocation for the batch (15 minutes left)."""
    from functions.worker import app

    context = FakeLambdaContext(
        function_name="test-files", aws_request_id=request_id, remaining_millis=900_000
    )
    return app.lambda_handler({"run_batch": batch_id}, context)


def status(caller: ApiCaller, batch_id: str, **query: str) -> dict[str, Any]:
    return caller.request(
        "GET",
        f"/links/batch/{batch_id}",
        resource="/links/batch/{batch_id}",
        path_parameters={"batch_id": batch_id},
        query=query or None,
    )


def test_a_batch_disables_the_callers_listed_links_and_not_anothers(
    alice: ApiCaller, bob: ApiCaller, started: StartedBatches
) -> None:
    # Given two links of alice and one of bob
    mine = [alice.shorten(f"https://example.com/a/{n}")["code"] for n in range(2)]
    theirs = bob.shorten("https://example.com/bob")["code"]
    # When alice disables all three by code and the jobs worker runs the batch
    answer = start(alice, {"action": "disable", "codes": [*mine, theirs]})
    assert answer["statusCode"] == 202, answer["body"]
    accepted = body(answer)
    assert started.started == [accepted["batch_id"]]
    assert accepted["status_url"].endswith(f"/links/batch/{accepted['batch_id']}")
    assert run_files(accepted["batch_id"]) == {"batch": "done"}
    # Then her links answer 410 and bob's still redirects
    assert [alice.follow(code)["statusCode"] for code in mine] == [410, 410]
    assert bob.follow(theirs)["statusCode"] == 301
    report = body(status(alice, accepted["batch_id"]))
    assert (report["status"], report["total"], report["changed"], report["failed"]) == ("done", 3, 2, 1)
    assert [(o["code"], o["outcome"]) for o in report["outcomes"]] == [
        (mine[0], "changed"),
        (mine[1], "changed"),
        (theirs, "not_found"),
    ]
    # ... and bob cannot read alice's batch, nor anyone a malformed or unknown one
    assert status(bob, accepted["batch_id"])["statusCode"] == 404
    for unknown in ("x" * 3000, "0" * 32):
        answer = status(alice, unknown)
        assert (answer["statusCode"], body(answer)["error"]) == (404, "batch_not_found")


def test_a_pages_outcomes_keep_the_listed_order(
    alice: ApiCaller, bob: ApiCaller, started: StartedBatches
) -> None:
    # Given 30 of alice's links, and one of bob's in the middle of the list
    mine = [alice.shorten(f"https://example.com/order/{n}")["code"] for n in range(30)]
    theirs = bob.shorten("https://example.com/order/bob")["code"]
    listed = [*mine[:15], theirs, *mine[15:]]
    links = LinksStore(api_services.api_settings().LINKS_TABLE)
    generation = links.takedown_generation()
    # When alice disables them all (the page's links are changed at once, not one by one)
    batch_id = body(start(alice, {"action": "disable", "codes": listed}))["batch_id"]
    assert run_files(batch_id) == {"batch": "done"}
    # Then every container's cache is told once for the page (30 changes of one item in
    # transactions at once would conflict on AWS)
    assert links.takedown_generation() == generation + 1
    # And the outcomes come in the order listed
    report = body(status(alice, batch_id))
    assert [o["code"] for o in report["outcomes"]] == listed
    assert [o["outcome"] for o in report["outcomes"]] == ["changed"] * 15 + ["not_found"] + ["changed"] * 15
    assert {alice.follow(code)["statusCode"] for code in mine} == {410}
    assert bob.follow(theirs)["statusCode"] == 301


def test_enable_brings_links_back_and_repeats_are_unchanged(
    alice: ApiCaller, started: StartedBatches
) -> None:
    code = alice.shorten("https://example.com/back")["code"]
    for action in ("disable", "enable", "enable"):
        run_files(body(start(alice, {"action": action, "codes": [code]}))["batch_id"])
    assert alice.follow(code)["statusCode"] == 301
    last = body(status(alice, started.started[-1]))
    assert (last["changed"], last["unchanged"]) == (0, 1)


def test_delete_by_tag_reaches_only_the_callers_tagged_links(
    alice: ApiCaller, bob: ApiCaller, started: StartedBatches
) -> None:
    spring = [alice.shorten(f"https://example.com/s/{n}", tags=["spring"])["code"] for n in range(3)]
    other = alice.shorten("https://example.com/other", tags=["autumn"])["code"]
    bobs = bob.shorten("https://example.com/bob-spring", tags=["spring"])["code"]
    batch_id = body(start(alice, {"action": "delete", "tag": "spring"}))["batch_id"]
    run_files(batch_id)
    assert [alice.follow(code)["statusCode"] for code in spring] == [410] * 3
    assert alice.follow(other)["statusCode"] == 301
    assert bob.follow(bobs)["statusCode"] == 301
    assert body(status(alice, batch_id))["changed"] == 3


def test_an_admins_tag_batch_reaches_every_owner(
    alice: ApiCaller, bob: ApiCaller, admin: ApiCaller, started: StartedBatches
) -> None:
    codes = [
        caller.shorten(f"https://example.com/{caller.owner}", tags=["recall"])["code"]
        for caller in (alice, bob)
    ]
    run_files(body(start(admin, {"action": "disable", "tag": "recall"}))["batch_id"])
    assert [admin.follow(code)["statusCode"] for code in codes] == [410, 410]


def test_set_changes_fields_as_patch_does(alice: ApiCaller, started: StartedBatches) -> None:
    code = alice.shorten("https://example.com/set")["code"]
    payload = {
        "action": "set",
        "codes": [code],
        "set": {"title": "Spring", "tags": ["a", "b"], "max_clicks": 5},
    }
    run_files(body(start(alice, payload))["batch_id"])
    shown = body(alice.link("GET", code))
    assert (shown["title"], shown["tags"], shown["max_clicks"]) == ("Spring", ["a", "b"], 5)


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"action": "disable"}, "exactly one of codes, job_id, tag"),
        ({"action": "disable", "codes": ["a"], "tag": "x"}, "exactly one of codes, job_id, tag"),
        ({"action": "set", "codes": ["a"]}, '"set" with the action "set"'),
        ({"action": "delete", "codes": ["a"], "set": {"title": "x"}}, '"set" with the action "set"'),
        ({"action": "set", "codes": ["a"], "set": {"expires_at": "2001-01-01T00:00:00Z"}}, "in the future"),
        ({"action": "set", "codes": ["a"], "set": {"max_clicks": 0}}, "max_clicks"),
        ({"action": "set", "codes": ["a"], "set": {"url": "https://x.example"}}, "url"),
        ({"action": "archive", "codes": ["a"]}, "action"),
        ({"action": "disable", "job_id": "not-a-job"}, "job_id"),
        ({"action": "disable", "codes": []}, "codes"),
    ],
)
def test_an_invalid_batch_is_a_422_that_says_what_is_wrong(
    alice: ApiCaller, started: StartedBatches, payload: dict[str, Any], says: str
) -> None:
    answer = start(alice, payload)
    assert answer["statusCode"] == 422
    error = body(answer)
    assert error["error"] == "invalid_request"
    assert says in error["message"]
    assert started.started == []


def a_job(owner: str) -> str:
    """A job record of ``owner``, none of its 10 rows counted yet."""
    job_id = uuid.uuid4().hex
    job = Job(job_id=job_id, total=10, chunks=1, created_at=clock.now(), owner=owner)
    JobsStore(api_services.api_settings().JOBS_TABLE).create_job(job, expires_at=clock.epoch_seconds() + 3600)
    return job_id


def test_another_owners_job_is_a_404(alice: ApiCaller, admin: ApiCaller, started: StartedBatches) -> None:
    job_id = a_job("bob")
    answer = start(alice, {"action": "disable", "job_id": job_id})
    assert answer["statusCode"] == 404
    assert body(answer)["error"] == "job_not_found"
    # ... while an admin sees it (it is not done yet: a record with no row counted)
    assert start(admin, {"action": "disable", "job_id": job_id})["statusCode"] == 409


def test_a_job_still_running_is_a_409(alice: ApiCaller, started: StartedBatches) -> None:
    answer = start(alice, {"action": "disable", "job_id": a_job("alice")})
    assert answer["statusCode"] == 409
    assert "not done" in body(answer)["message"]
    assert started.started == []


def test_batch_is_a_reserved_word(alice: ApiCaller) -> None:
    answer = alice.request("POST", "/", body={"url": "https://example.com/r", "code": "batch"})
    assert answer["statusCode"] == 400


def test_a_page_run_twice_is_counted_once(alice: ApiCaller, started: StartedBatches) -> None:
    # Given a batch whose first run crashed after storing its page's outcomes, before counting them
    codes = [alice.shorten(f"https://example.com/c/{n}")["code"] for n in range(3)]
    batch_id = body(start(alice, {"action": "disable", "codes": codes}))["batch_id"]
    runner = worker_services.batch_runner()
    store: BatchStore = runner._records  # type: ignore[assignment]
    real_count = store.count_page

    def crash(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("the invocation died")

    store.count_page = crash  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        run_files(batch_id)
    store.count_page = real_count  # type: ignore[method-assign]
    # When Lambda retries the invocation, and then the same event arrives once more
    assert run_files(batch_id) == {"batch": "done"}
    assert run_files(batch_id, request_id="run-2") == {"batch": "busy"}
    # Then the batch counts each link once, as changed
    report = body(status(alice, batch_id))
    assert (report["total"], report["changed"], report["unchanged"]) == (3, 3, 0)


def test_a_batch_whose_worker_died_is_started_again_then_fails_when_it_keeps_dying(
    alice: ApiCaller, started: StartedBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = alice.shorten("https://example.com/dies")["code"]
    batch_id = body(start(alice, {"action": "disable", "codes": [code]}))["batch_id"]
    store = BatchStore(api_services.api_settings().JOBS_TABLE)
    # A status read while the first invocation's lease holds starts nothing more
    status(alice, batch_id)
    assert started.started == [batch_id]
    # Each worker takes the lease and dies; once its lease lapses a status read starts another
    monkeypatch.setattr(batch_logic, "LEASE_SECONDS", -1)
    for attempt in range(batch_logic.MAX_TAKEOVERS + 1):
        assert store.claim(batch_id, f"dead-{attempt}", now=0, lease_until=-1) is not None
        status(alice, batch_id)
    assert len(started.started) == batch_logic.MAX_TAKEOVERS + 2
    # The next worker finds it taken over too often: the batch ends as failed, not running forever
    assert run_files(batch_id, request_id="last") == {"batch": "failed"}
    report = body(status(alice, batch_id))
    assert report["status"] == "failed"
    assert "stalled" in report["error"]


def test_outcomes_come_in_pages(
    alice: ApiCaller, started: StartedBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_logic, "PAGE_LINKS", 2)
    monkeypatch.setattr(batch_logic, "_STATUS_PAGES", 2)
    codes = [alice.shorten(f"https://example.com/p/{n}")["code"] for n in range(5)]
    batch_id = body(start(alice, {"action": "disable", "codes": codes}))["batch_id"]
    run_files(batch_id)
    seen, cursor = [], None
    while True:
        page = body(status(alice, batch_id, **({"cursor": cursor} if cursor else {})))
        seen += [o["code"] for o in page["outcomes"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == codes


def test_a_batch_disable_refreshes_each_changed_codes_stage_cache_entry(
    alice: ApiCaller, started: StartedBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the prod stage's cache (a recording server standing for the stage) and three links,
    # one of them disabled already
    from tests.shortener.links.test_stage_cache import RecordingStage

    RecordingStage.requests = []
    RecordingStage.status = 410
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingStage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/prod/"
    monkeypatch.setenv("API_CACHE_ENABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL_EXECUTE_API", url)
    api_services.api_settings.cache_clear()
    try:
        codes = [alice.shorten(f"https://example.com/cached/{n}")["code"] for n in range(3)]
        alice.link("PATCH", codes[2], {"status": "disabled"})
        RecordingStage.requests = []
        # When a batch disables all three
        run_files(body(start(alice, {"action": "disable", "codes": codes}))["batch_id"])
    finally:
        server.shutdown()
        server.server_close()
    # Then the stage got one signed GET asking for a fresh answer for each code the batch changed
    assert sorted(path for _, path, _ in RecordingStage.requests) == sorted(
        f"/prod/{code}" for code in codes[:2]
    )
    assert all(headers["Cache-Control"] == "max-age=0" for _, _, headers in RecordingStage.requests)
    assert all(
        headers["Authorization"].startswith("AWS4-HMAC-SHA256") for _, _, headers in RecordingStage.requests
    )


def test_the_most_codes_of_the_longest_kind_fit_and_one_more_is_a_422(
    alice: ApiCaller, started: StartedBatches
) -> None:
    codes = [f"{n:064d}" for n in range(MAX_BATCH_CODES + 1)]
    assert start(alice, {"action": "disable", "codes": codes[:-1]})["statusCode"] == 202
    too_many = start(alice, {"action": "disable", "codes": codes})
    assert too_many["statusCode"] == 422
    assert "codes" in body(too_many)["message"]
