"""The HTTP contract, end to end, through the `deployment` fixture: the local stack in `make test`,
any deployed stack under `make acceptance STACK=<name>` (ARCHITECTURE.md, "HTTP contract")."""

import uuid

import pytest

from tests.e2e.deployment import Deployment
from tests.e2e.test_bulk_e2e import results_of, wait_until_done


@pytest.mark.e2e_timeout(200)
def test_a_bulk_upload_ends_with_one_outcome_per_row_in_input_order(deployment: Deployment) -> None:
    # Given a CSV with two good rows around a bad one (unique URLs: a deployed stack keeps its links)
    run = uuid.uuid4().hex[:12]
    rows = [f"https://example.com/acceptance/{run}/1", "not a url", f"https://example.com/acceptance/{run}/3"]
    # When it is uploaded
    answer = deployment.request(
        "POST", "bulk", "url\n" + "\n".join(rows) + "\n", {"Content-Type": "text/csv"}
    )
    # Then the job is accepted with its total and a status URL
    assert answer.status == 202, answer.text
    accepted = answer.json()
    assert accepted["total"] == 3
    assert accepted["status_url"].endswith(f"/jobs/{accepted['job_id']}")
    # And it ends done, with two codes and one row error
    job = wait_until_done(deployment, accepted["job_id"], 180)
    assert (job["status"], job["total"], job["succeeded"], job["failed"]) == ("done", 3, 2, 1), job
    # And the results list each row once, in input order, the bad one with an error and no code
    lines = results_of(deployment, accepted["job_id"])
    assert [(line["row"], line["url"]) for line in lines] == [("1", rows[0]), ("2", rows[1]), ("3", rows[2])]
    assert lines[1]["error"].startswith("invalid_url") and not lines[1]["code"]
    # And each code redirects to its row's URL
    for line in (lines[0], lines[2]):
        followed = deployment.request("GET", line["code"])
        assert (followed.status, followed.headers["Location"]) == (301, line["url"])


def test_a_csv_without_a_url_column_is_a_400_with_a_message(deployment: Deployment) -> None:
    # ("link", "long url", ... are URL columns as other tools export them: this file has none)
    answer = deployment.request(
        "POST", "bulk", "name;email\nAda;ada@example.com\n", {"Content-Type": "text/csv"}
    )
    assert answer.status == 400
    assert set(answer.json()) == {"error", "message"}
    assert "'name', 'email'" in answer.json()["message"]  # what its first line has


def test_an_unknown_job_is_a_404(deployment: Deployment) -> None:
    answer = deployment.request("GET", f"jobs/{uuid.uuid4()}")
    assert answer.status == 404
    assert answer.json()["error"]


def test_an_invalid_url_is_refused_with_a_4xx_and_a_message(deployment: Deployment) -> None:
    answer = deployment.post_json("/", {"url": "not a url"})
    assert answer.status in (400, 422)
    assert answer.json()["message"]


def test_the_app_site_association_is_json_on_both_paths(deployment: Deployment) -> None:
    for path in ("apple-app-site-association", ".well-known/apple-app-site-association"):
        answer = deployment.request("GET", path)
        assert answer.status == 200, path
        assert answer.headers["Content-Type"].startswith("application/json")
        assert "applinks" in answer.json()


def test_a_path_or_method_that_matches_no_route_is_a_404_in_the_error_shape(deployment: Deployment) -> None:
    # API Gateway's own 403 "Missing Authentication Token", as the template's gateway response has it
    for method, path in (("GET", "no/such/route"), ("DELETE", "jobs"), ("PUT", "")):
        answer = deployment.request(method, path)
        assert answer.status == 404, (method, path, answer.text)
        assert answer.json()["error"] == "not_found"
        assert "openapi.json" in answer.json()["message"]
