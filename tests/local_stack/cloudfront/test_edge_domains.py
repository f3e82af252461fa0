"""The local edge with the stack's other domains (local_stack/cloudfront/edge.py): each on a
listener of its own, answered as a request whose Host is that domain; the template's
viewer-request function run as its Python twin, whose header the cache key and the origin get."""

import http.client
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from local_stack.cloudformation.resources import template_resources
from local_stack.cloudfront.cache import CachePolicy
from local_stack.cloudfront.edge import VIEWER_FUNCTIONS, EdgeConfig, LocalEdge, _viewer_function
from local_stack.embedded import EmbeddedAws, aws_client
from local_stack.ports import listening_socket

pytestmark = pytest.mark.integration

REGION = "us-east-1"
NODE = shutil.which("node")
APP_SITE_ASSOCIATION = "/.well-known/apple-app-site-association"


class Origin(BaseHTTPRequestHandler):
    """A redirect kept for 600 s, naming the host it was asked for in its Location; the app-site
    association document, kept as long, naming that host too (as each domain's own document)."""

    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:
        Origin.seen.append(dict(self.headers.items()))
        if self.path == APP_SITE_ASSOCIATION:
            self.app_site_association()
            return
        self.send_response(301)
        self.send_header("Location", f"https://example.com/{self.headers.get('X-Shortener-Host', '')}")
        self.send_header("Cache-Control", "s-maxage=600")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def app_site_association(self) -> None:
        document = json.dumps({"applinks": {"details": [{"appIDs": [self.headers.get("X-Shortener-Host")]}]}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "s-maxage=600")
        self.send_header("Content-Length", str(len(document)))
        self.end_headers()
        self.wfile.write(document.encode())

    def log_message(self, *args: Any) -> None:
        return None


def template_function_code() -> str:
    resources = template_resources("edge-domains", REGION, "http://127.0.0.1:1")
    return str(resources.properties("EdgeViewerHost")["FunctionCode"])


@pytest.fixture(scope="module")
def edge(aws: EmbeddedAws) -> Iterator[LocalEdge]:
    origin = ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    distribution = aws_client("cloudfront", aws.url, REGION).create_distribution(
        DistributionConfig={
            "CallerReference": "edge-domains-test",
            "Comment": "edge domains test",
            "Enabled": True,
            "Origins": {"Quantity": 1, "Items": [{"Id": "api", "DomainName": "example.com"}]},
            "DefaultCacheBehavior": {"TargetOriginId": "api", "ViewerProtocolPolicy": "allow-all"},
        }
    )["Distribution"]
    aws_client("logs", aws.url, REGION).create_log_group(logGroupName="edge-domains-logs")
    config = EdgeConfig(
        distribution_id=distribution["Id"],
        domain_name=distribution["DomainName"],
        origin_domain="example.com",
        origin_headers=(),
        allowed_methods=frozenset({"GET", "HEAD"}),
        policy=CachePolicy(),
        forwarded=frozenset(),
        log_group="edge-domains-logs",
        record_fields=("cs-uri-stem", "x-host-header"),
        key_headers=("X-Shortener-Host",),
        viewer_request=_viewer_function(template_function_code()),
    )
    host, port = origin.server_address[:2]
    server = LocalEdge(
        config,
        origin_url=f"http://{host!s}:{port}/",
        aws_endpoint=aws.url,
        region=REGION,
        listening=listening_socket(0),
    )
    server.serve_alias("go.example", listening_socket(0))
    server.start()
    yield server
    server.stop()
    origin.shutdown()
    origin.server_close()


def get(url: str, path: str, **headers: str) -> http.client.HTTPResponse:
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_each_domain_is_its_own_host_to_the_origin_and_in_the_cache(edge: LocalEdge) -> None:
    alias = edge.alias_url("go.example")
    # A viewer's own X-Shortener-Host is overwritten by the function
    first = get(alias, "/abc", **{"X-Shortener-Host": "forged.example"})
    again = get(alias, "/abc")
    on_default = get(edge.url, "/abc")
    assert first.getheader("X-Cache") == "Miss from cloudfront"
    assert first.getheader("Location") == "https://example.com/go.example"
    assert again.getheader("X-Cache") == "Hit from cloudfront"
    # the default name's request is another cache entry: the alias's redirect never answers it
    assert on_default.getheader("X-Cache") == "Miss from cloudfront"
    assert (
        on_default.getheader("Location")
        == f"https://example.com/{edge.url.removeprefix('http://').rstrip('/')}"
    )
    assert all(seen["X-Shortener-Host"] != "forged.example" for seen in Origin.seen)
    edge.flush_logs()


def app_ids(url: str) -> tuple[list[str], str | None]:
    """The app ids of the document the edge answers at ``url``, and its X-Cache."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", APP_SITE_ASSOCIATION)
    response = connection.getresponse()
    document = json.loads(response.read())
    connection.close()
    return document["applinks"]["details"][0]["appIDs"], response.getheader("X-Cache")


def test_each_domain_gets_its_own_app_site_association_also_from_the_cache(edge: LocalEdge) -> None:
    # Given go.example's document asked for once (the origin says s-maxage: the edge keeps it)
    alias, default = edge.alias_url("go.example"), edge.url
    default_host = default.removeprefix("http://").rstrip("/")
    assert app_ids(alias) == (["go.example"], "Miss from cloudfront")
    # When the default domain's is asked for, and then both again
    # Then each is its own, from its own cache entry: the kept one never answers the other domain
    assert app_ids(default) == ([default_host], "Miss from cloudfront")
    assert app_ids(alias) == (["go.example"], "Hit from cloudfront")
    assert app_ids(default) == ([default_host], "Hit from cloudfront")
    edge.flush_logs()


def test_the_template_function_has_its_python_twin() -> None:
    assert _viewer_function(template_function_code()) in VIEWER_FUNCTIONS.values()
    with pytest.raises(ValueError, match="no Python twin"):
        _viewer_function(template_function_code().replace("x-shortener-host", "x-other"))


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the CloudFront Function's JavaScript")
def test_the_python_twin_does_what_the_javascript_does() -> None:
    # CloudFront Functions' event: header names in lower case, each {"value": ...}
    script = template_function_code() + (
        "\nconst out = handler({request: {headers: {host: {value: 'go.example'},"
        " 'x-shortener-host': {value: 'forged.example'}}}});"
        "\nconsole.log(JSON.stringify(out.headers));"
    )
    ran = subprocess.run([str(NODE), "-e", script], capture_output=True, text=True, check=True, timeout=30)
    by_javascript = {name: value["value"] for name, value in json.loads(ran.stdout).items()}
    by_twin = {"host": "go.example", "X-Shortener-Host": "forged.example"}
    _viewer_function(template_function_code())(by_twin, "go.example")
    assert {name.lower(): value for name, value in by_twin.items()} == by_javascript
