"""Several domains on one local stack (docs/domains.md): a link made before there were several
still redirects on the default domain after the upgrade; a link answers on its own domain's port
and 404 on another's, and on the API's own URL always; a key limited to one domain cannot make a
link on another (403); a bulk file's domain column puts each row's link on its domain. One stack
started twice on one data folder: before and after Domains."""

import csv
import io
import json
from pathlib import Path

from tests.e2e.conftest import RunningStack, StartStack, http_request
from tests.e2e.test_access_e2e import shortener
from tests.e2e.test_links_e2e import wait_for_job

# Each domain's apple-app-site-association: go.example has its own, shop.example the default's.
DEFAULT_APP_LINKS = {"applinks": {"details": [{"appIDs": ["TEAM000001.com.example.app"]}]}}
GO_APP_LINKS = {"applinks": {"details": [{"appIDs": ["TEAM000002.com.go.app"]}]}}
DOMAINS = {
    "Domains": "go.example,shop.example",
    # The distribution answers names of its own only with a certificate naming them, as on AWS.
    "EdgeCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/e2e-domains",
    "AppleAppSiteAssociation": json.dumps(DEFAULT_APP_LINKS),
    "DomainAppleAppSiteAssociations": json.dumps({"go.example": GO_APP_LINKS}),
}


def status_at(base_url: str, code: str) -> int:
    return http_request(base_url, "GET", code).status


def member_key(stack: RunningStack, domains: str) -> str:
    made = shortener(stack, "keys", "create", "--name", "brand", "--owner", "brand-a", "--domains", domains)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def each_domain_serves_its_own_app_site_association(stack: RunningStack) -> None:
    """Each domain's port serves its own document from its root (both paths), a domain with none
    of its own and the default domain's port the default one, and so does the API's own URL."""
    domain_urls = stack.info["domain_urls"]
    expected = {
        domain_urls["go.example"]: GO_APP_LINKS,
        domain_urls["shop.example"]: DEFAULT_APP_LINKS,
        stack.edge_url: DEFAULT_APP_LINKS,
        stack.api_url: DEFAULT_APP_LINKS,
    }
    for base, document in expected.items():
        for path in ("apple-app-site-association", ".well-known/apple-app-site-association"):
            answer = http_request(base, "GET", path)
            assert (answer.status, answer.json()) == (200, document), (base, path, answer.text)


def test_links_on_two_domains_answer_on_their_own_and_an_old_link_keeps_working(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a stack with one domain, and a link made on it
    before = start_stack(data_dir=tmp_path / "data")
    old = before.post_json("", {"url": "https://example.com/before-domains"}).json()
    assert before.stop() == 0
    # When the stack is upgraded to several domains (same data folder)
    stack = start_stack(params=DOMAINS, data_dir=tmp_path / "data")
    domain_urls = stack.info["domain_urls"]
    assert set(domain_urls) == {"go.example", "shop.example"}
    go, shop, default = domain_urls["go.example"], domain_urls["shop.example"], stack.edge_url
    # Then the old link belongs to the default domain and still redirects there
    assert status_at(default, old["code"]) == 301
    assert status_at(go, old["code"]) == 404
    # And a link on each domain answers on its own, 404 on the others, and on the API's URL
    on_go = stack.post_json("", {"url": "https://example.com/go", "domain": "go.example"}).json()
    on_shop = stack.post_json("", {"url": "https://example.com/shop", "domain": "shop.example"}).json()
    assert on_go["short_url"] == go + on_go["code"]
    assert (status_at(go, on_go["code"]), status_at(shop, on_go["code"])) == (301, 404)
    assert (status_at(shop, on_shop["code"]), status_at(go, on_shop["code"])) == (301, 404)
    assert status_at(default, on_go["code"]) == 404
    assert {status_at(stack.api_url, code) for code in (old["code"], on_go["code"], on_shop["code"])} == {301}
    # A redirect kept by the edge for one domain never answers another (the cache key has the host)
    assert http_request(go, "GET", on_go["code"]).headers["X-Cache"] == "Hit from cloudfront"
    assert status_at(shop, on_go["code"]) == 404
    each_domain_serves_its_own_app_site_association(stack)
    # And a key limited to go.example makes links there only
    key = member_key(stack, "go.example")
    refused = stack.post_json("", {"url": "https://example.com/x", "domain": "shop.example"}, api_key=key)
    assert refused.status == 403, refused.text
    assert refused.json()["error"] == "domain_not_allowed"
    made = stack.post_json("", {"url": "https://example.com/y"}, api_key=key)
    assert made.status == 201 and made.json()["domain"] == "go.example", made.text
    listed = stack.request("GET", "links?domain=go.example", api_key=key).json()["links"]
    assert [link["code"] for link in listed] == [made.json()["code"]]
    domains = json.loads(stack.request("GET", "domains", api_key=key).body)["domains"]
    assert [(item["name"], item["allowed"]) for item in domains][1:] == [
        ("go.example", True),
        ("shop.example", False),
    ]
    # And a bulk file's domain column puts each row's link on its domain, an unknown one a row error
    assert_bulk_rows_on_their_domains(stack, {"go.example": go, "shop.example": shop, "": default})


def assert_bulk_rows_on_their_domains(stack: RunningStack, bases: dict[str, str]) -> None:
    rows = [("https://example.com/bulk-go", "Go.Example"), ("https://example.com/bulk-shop", "shop.example")]
    text = "url,domain\n" + "".join(f"{url},{domain}\n" for url, domain in rows)
    text += "https://example.com/bulk-default,\nhttps://example.com/bulk-nope,nope.example\n"
    accepted = stack.request("POST", "bulk", text, {"Content-Type": "text/csv"})
    assert accepted.status == 202, accepted.text
    job = wait_for_job(stack, accepted.json()["job_id"], 120)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 3, 1), job
    results = list(csv.DictReader(io.StringIO(stack.request("GET", f"jobs/{job['job_id']}/results").text)))
    on_go, on_shop, on_default, unknown = results
    assert unknown["code"] == "" and unknown["error"].startswith("unknown_domain: This stack has no domain")
    for row, own, other in (
        (on_go, "go.example", "shop.example"),
        (on_shop, "shop.example", ""),
        (on_default, "", "go.example"),
    ):
        assert row["short_url"] == bases[own] + row["code"], row
        assert (status_at(bases[own], row["code"]), status_at(bases[other], row["code"])) == (301, 404)
