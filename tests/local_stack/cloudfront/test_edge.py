"""The local edge's server (local_stack/cloudfront/edge.py) in front of a stub origin, with the
distribution and the log group on the embedded AWS: hits and misses, the origin request's headers,
invalidations applied, one log record per answer."""

import http.client
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from local_stack.cloudfront.cache import CachePolicy
from local_stack.cloudfront.edge import EdgeConfig, LocalEdge
from local_stack.embedded import EmbeddedAws, aws_client
from local_stack.ports import listening_socket

pytestmark = pytest.mark.integration

REGION = "us-east-1"
FIELDS = ("timestamp(ms)", "cs-method", "cs-uri-stem", "sc-status", "cs(Referer)", "x-edge-result-type")


class Origin(BaseHTTPRequestHandler):
    """Answers /cached with s-maxage, /private with no-store, /missing with 404; keeps requests."""

    seen: list[tuple[str, dict[str, str]]] = []

    def do_GET(self) -> None:
        Origin.seen.append((self.path, dict(self.headers.items())))
        status, cache_control = {"/cached": (301, "s-maxage=600"), "/missing": (404, "no-store")}.get(
            self.path, (301, "no-store")
        )
        self.send_response(status)
        self.send_header("Location", "https://example.com/")
        self.send_header("Cache-Control", cache_control)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def edge(aws: EmbeddedAws) -> Iterator[LocalEdge]:
    origin = ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    cloudfront = aws_client("cloudfront", aws.url, REGION)
    distribution = cloudfront.create_distribution(
        DistributionConfig={
            "CallerReference": "edge-test",
            "Comment": "edge test",
            "Enabled": True,
            "Origins": {"Quantity": 1, "Items": [{"Id": "api", "DomainName": "example.com"}]},
            "DefaultCacheBehavior": {"TargetOriginId": "api", "ViewerProtocolPolicy": "allow-all"},
        }
    )["Distribution"]
    aws_client("logs", aws.url, REGION).create_log_group(logGroupName="edge-logs")
    config = EdgeConfig(
        distribution_id=distribution["Id"],
        domain_name=distribution["DomainName"],
        origin_domain="example.com",
        origin_headers=(("X-Shortener-Edge", "secret"),),
        allowed_methods=frozenset({"GET", "HEAD"}),
        policy=CachePolicy(error_ttls={404: 0}),
        forwarded=frozenset(
            {"user-agent", "referer", "cloudfront-viewer-country", "cloudfront-is-mobile-viewer"}
        ),
        log_group="edge-logs",
        record_fields=FIELDS,
    )
    host, port = origin.server_address[:2]
    server = LocalEdge(
        config,
        origin_url=f"http://{host!s}:{port}/",
        aws_endpoint=aws.url,
        region=REGION,
        listening=listening_socket(0),
        country="JP",
    )
    server.start()
    yield server
    server.stop()
    origin.shutdown()
    origin.server_close()


def get(edge: LocalEdge, path: str, method: str = "GET", **headers: str) -> http.client.HTTPResponse:
    host, port = edge.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=10)
    connection.request(method, path, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_a_cacheable_answer_is_a_miss_then_a_hit_with_cloudfronts_headers(edge: LocalEdge) -> None:
    first = get(
        edge,
        "/cached?utm=1",
        **{"User-Agent": "Mozilla/5.0 (iPhone) Mobile", "Referer": "https://a.example/"},
    )
    second = get(edge, "/cached")
    assert first.getheader("X-Cache") == "Miss from cloudfront"
    assert second.getheader("X-Cache") == "Hit from cloudfront"
    assert second.getheader("Location") == first.getheader("Location") == "https://example.com/"
    assert second.getheader("Age") is not None
    assert second.getheader("Via") == f"1.1 {edge.config.domain_name} (CloudFront)"
    assert second.getheader("X-Amz-Cf-Id") and second.getheader("X-Amz-Cf-Pop")
    path, headers = next(item for item in Origin.seen if item[0] == "/cached")
    assert path == "/cached"  # no query string forwarded
    assert headers["X-Shortener-Edge"] == "secret"
    assert headers["CloudFront-Viewer-Country"] == "JP"
    assert headers["CloudFront-Is-Mobile-Viewer"] == "true"
    assert headers["X-Forwarded-For"] == "127.0.0.1"
    assert "CloudFront-Is-IOS-Viewer" not in headers  # not named by the policy
    # and the origin request carries the request's id, which the answer and the log give too
    assert headers["X-Amz-Cf-Id"] == first.getheader("X-Amz-Cf-Id")


def test_no_store_and_errors_are_never_kept(edge: LocalEdge) -> None:
    assert get(edge, "/private").getheader("X-Cache") == "Miss from cloudfront"
    assert get(edge, "/private").getheader("X-Cache") == "Miss from cloudfront"
    assert get(edge, "/missing").getheader("X-Cache") == "Error from cloudfront"
    assert get(edge, "/missing").getheader("X-Cache") == "Error from cloudfront"
    assert get(edge, "/cached", method="DELETE").status == 403  # not an allowed method


def test_an_invalidation_is_applied(edge: LocalEdge, aws: EmbeddedAws) -> None:
    get(edge, "/cached")
    aws_client("cloudfront", aws.url, REGION).create_invalidation(
        DistributionId=edge.config.distribution_id,
        InvalidationBatch={"Paths": {"Quantity": 1, "Items": ["/cach*"]}, "CallerReference": "one"},
    )
    edge.apply_invalidations()  # what the edge's poller does every second
    assert get(edge, "/cached").getheader("X-Cache") == "Miss from cloudfront"


def test_every_answer_is_logged_with_exactly_the_record_fields(edge: LocalEdge, aws: EmbeddedAws) -> None:
    get(edge, "/cached", Referer="https://mail.example.org/inbox")
    edge.flush_logs()
    events = aws_client("logs", aws.url, REGION).filter_log_events(logGroupName="edge-logs")["events"]
    records = [json.loads(event["message"]) for event in events]
    assert all(tuple(record) == FIELDS for record in records)
    assert any(
        record["cs(Referer)"] == "https%3A%2F%2Fmail.example.org%2Finbox"
        and record["x-edge-result-type"] in {"Hit", "Miss"}
        for record in records
    )
    assert all(int(record["timestamp(ms)"]) <= time.time() * 1000 for record in records)
