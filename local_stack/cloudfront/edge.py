"""The local edge: a caching HTTP front on loopback that applies the distribution the stack
deployed (template.yaml's EdgeDistribution, its cache and origin request policies), as CloudFront
does in front of the API (docs/edge.md, "The local edge").

- Behaviour: the distribution's default behaviour (its allowed and cached methods); other methods
  are refused with 403, as CloudFront does.
- Viewer-request functions: the CloudFront Function the behaviour associates is run as its Python
  twin (``VIEWER_FUNCTIONS``, matched by the function's code; a function without a twin stops the
  stack rather than being skipped).
- Domains: the distribution's other names (its Aliases beyond the default) each have a loopback
  listener of their own, where a request is answered as one whose Host is that name.
- Cache: cache.py's rules (key, TTLs, Cache-Control, error caching), LRU-bounded.
- Origin requests: to the local listener of the API the distribution's origin names (the HTTP API
  of apigateway/http_api.py; stack.py maps its execute-api host), with the origin's custom
  headers, the origin request policy's viewer headers, and the headers CloudFront derives
  (viewer.py).
- Answers carry CloudFront's headers: X-Cache, Age on hits, Via, X-Amz-Cf-Id, X-Amz-Cf-Pop
  ("Add CloudFront request headers" and the response headers CloudFront adds,
  https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/adding-cloudfront-headers.html).
- Invalidations created on the embedded AWS (CreateInvalidation) are applied within a second or two
  (ListInvalidations polled every second).
- Logs: one JSON record per answered request, hits included, with exactly the template's
  RecordFields (log_fields.py), put into EdgeLogGroup every second ("Standard logging reference",
  https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/standard-logs-reference.html),
  so the log group's subscription hands them to the collector."""

import base64
import contextlib
import http.client
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, urlsplit

from local_stack.apigateway.http_limits import PAYLOAD_LIMIT_BYTES
from local_stack.cloudfront.cache import CachePolicy, EdgeCache, Entry, cache_key, path_of, ttl_for
from local_stack.cloudfront.log_fields import record_fields
from local_stack.cloudfront.viewer import viewer_headers
from local_stack.embedded import aws_client
from local_stack.http_reading import BoundedConnections, BoundedRequestHandler, ReadRefused
from local_stack.ports import LISTEN_BACKLOG, adopt

log = logging.getLogger(__name__)

DISTRIBUTION = "EdgeDistribution"
LOG_GROUP = "EdgeLogGroup"
# A point of presence's code as CloudFront names them (airport code, number, capacity): a local one.
POP = "LCL1-P1"
DEFAULT_CAPACITY = 10_000
# Hop-by-hop headers (RFC 9110 7.6.1) and those the edge writes itself.
_NOT_PASSED = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "via",
        "age",
        "x-cache",
        "server",
        "date",
    }
)
# Headers a viewer's request body needs (CloudFront forwards them for methods with a body).
_BODY_HEADERS = ("Content-Type", "Content-Length")


def _copy_viewer_host(headers: dict[str, str], viewer_host: str) -> None:
    for name in [name for name in headers if name.lower() == "x-shortener-host"]:
        del headers[name]
    headers["X-Shortener-Host"] = viewer_host


# The CloudFront Functions the local edge can run: each one's JavaScript (whitespace aside) and its
# Python twin, which changes the viewer's headers as the JavaScript changes the request.
VIEWER_FUNCTIONS: dict[str, Callable[[dict[str, str], str], None]] = {
    "function handler(event) { var request = event.request; var host = request.headers.host; "
    "request.headers['x-shortener-host'] = {value: host ? host.value : ''}; return request; }": (
        _copy_viewer_host
    ),
}


def _viewer_function(code: str) -> Callable[[dict[str, str], str], None]:
    twin = VIEWER_FUNCTIONS.get(" ".join(code.split()))
    if twin is None:
        raise ValueError(
            "The edge's viewer-request function has no Python twin in local_stack/cloudfront/edge.py "
            "(VIEWER_FUNCTIONS): the local edge cannot run it"
        )
    return twin


@dataclass(frozen=True)
class EdgeConfig:
    """What the local edge applies, read from the deployed distribution and its policies."""

    distribution_id: str
    domain_name: str
    origin_domain: str  # where the default behaviour's origin points (an execute-api host)
    origin_headers: tuple[tuple[str, str], ...]
    allowed_methods: frozenset[str]
    policy: CachePolicy
    forwarded: frozenset[str]  # the origin request policy's header names, lower-cased
    log_group: str
    record_fields: tuple[str, ...]
    # Whether the origin request policy passes the viewer's query string on (QueryStringBehavior
    # all): to the origin only, never into the cache key, which the cache policy alone makes.
    forwards_query: bool = False
    # The cache policy's headers: part of the cache key, and sent to the origin.
    key_headers: tuple[str, ...] = ()
    # The behaviour's viewer-request function, as its Python twin (None: none associated).
    viewer_request: Callable[[dict[str, str], str], None] | None = None


def has_edge(resources: Any) -> bool:
    """Whether the template deploys the distribution (its Edge condition holds)."""
    return DISTRIBUTION in resources.of_type("AWS::CloudFront::Distribution")


def edge_aliases(resources: Any) -> tuple[str, ...]:
    """The distribution's names beyond its default one (the stack's other domains): its Aliases
    without DomainName, which is the default domain's name."""
    config = resources.of_type("AWS::CloudFront::Distribution")[DISTRIBUTION]["DistributionConfig"]
    default = str(resources.resolver.parameters.get("DomainName") or "").lower()
    return tuple(
        name for name in (str(alias).lower() for alias in config.get("Aliases") or []) if name != default
    )


def edge_config(resources: Any, endpoint: str, region: str) -> EdgeConfig | None:
    """The edge's settings when the template's Edge condition holds (None otherwise)."""
    if not has_edge(resources):
        return None
    distributions = resources.of_type("AWS::CloudFront::Distribution")
    distribution_id = resources.resolver.refs.get(DISTRIBUTION) or resources.physical_id(DISTRIBUTION)
    deployed = aws_client("cloudfront", endpoint, region).get_distribution(Id=distribution_id)["Distribution"]
    config = distributions[DISTRIBUTION]["DistributionConfig"]
    behaviour = config["DefaultCacheBehavior"]
    origin = next(item for item in config["Origins"] if item["Id"] == behaviour["TargetOriginId"])
    # Where the origin points, as deployed: it names the id the origin's provider made (the
    # template's resolved properties may have been read before that id existed).
    deployed_origin = next(
        item for item in deployed["DistributionConfig"]["Origins"]["Items"] if item["Id"] == origin["Id"]
    )
    cache_policy = _by_ref(resources, "AWS::CloudFront::CachePolicy", behaviour.get("CachePolicyId"))
    request_policy = _by_ref(
        resources, "AWS::CloudFront::OriginRequestPolicy", behaviour.get("OriginRequestPolicyId")
    )
    cache_config = cache_policy.get("CachePolicyConfig", {})
    headers = request_policy.get("OriginRequestPolicyConfig", {}).get("HeadersConfig", {})
    key_headers = (
        cache_config.get("ParametersInCacheKeyAndForwardedToOrigin", {})
        .get("HeadersConfig", {})
        .get("Headers", [])
    )
    return EdgeConfig(
        distribution_id=distribution_id,
        domain_name=str(deployed["DomainName"]),
        origin_domain=str(deployed_origin["DomainName"]),
        origin_headers=tuple(
            (str(header["HeaderName"]), str(header["HeaderValue"]))
            for header in origin.get("OriginCustomHeaders", [])
        ),
        allowed_methods=frozenset(str(method) for method in behaviour.get("AllowedMethods", ["GET", "HEAD"])),
        policy=CachePolicy(
            min_ttl=int(cache_config.get("MinTTL", 0)),
            default_ttl=int(cache_config.get("DefaultTTL", 86400)),
            max_ttl=int(cache_config.get("MaxTTL", 31536000)),
            cached_methods=frozenset(
                str(method) for method in behaviour.get("CachedMethods", ["GET", "HEAD"])
            ),
            error_ttls={
                int(error["ErrorCode"]): int(error.get("ErrorCachingMinTTL", 10))
                for error in config.get("CustomErrorResponses", [])
            },
        ),
        forwarded=frozenset(str(name).lower() for name in headers.get("Headers", [])),
        log_group=resources.physical_id(LOG_GROUP),
        record_fields=record_fields(resources.template),
        forwards_query=request_policy.get("OriginRequestPolicyConfig", {})
        .get("QueryStringsConfig", {})
        .get("QueryStringBehavior")
        == "all",
        key_headers=tuple(str(name) for name in key_headers),
        viewer_request=_viewer_request(resources, behaviour),
    )


def _viewer_request(
    resources: Any, behaviour: Mapping[str, Any]
) -> Callable[[dict[str, str], str], None] | None:
    """The Python twin of the behaviour's viewer-request CloudFront Function (None without one)."""
    arn = next(
        (
            str(item.get("FunctionARN", ""))
            for item in behaviour.get("FunctionAssociations") or []
            if item.get("EventType") == "viewer-request"
        ),
        None,
    )
    if arn is None:
        return None
    for logical_id, properties in resources.of_type("AWS::CloudFront::Function").items():
        if resources.resolver.attributes.get(logical_id, {}).get("FunctionMetadata.FunctionARN") == arn:
            return _viewer_function(str(properties.get("FunctionCode", "")))
    raise ValueError(f"The edge's viewer-request function {arn} is not in the template")


def _by_ref(resources: Any, resource_type: str, ref: Any) -> dict[str, Any]:
    """The properties of the resource of ``resource_type`` whose Ref is ``ref``."""
    for logical_id, properties in resources.of_type(resource_type).items():
        if resources.resolver.refs.get(logical_id, resources.physical_id(logical_id)) == ref:
            return dict(properties)
    return {}


def request_id() -> str:
    """An X-Amz-Cf-Id: 56 characters of URL-safe base64, as CloudFront's."""
    return base64.urlsafe_b64encode(os.urandom(42)).decode()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


class LocalEdge(BoundedConnections, ThreadingHTTPServer):
    """The edge's HTTP server, its cache, its log writer and its invalidation poller."""

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        config: EdgeConfig,
        *,
        origin_url: str,
        aws_endpoint: str,
        region: str,
        listening: socket.socket,
        country: str = "US",
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _EdgeHandler, bind_and_activate=False)
        adopt(self, listening)
        self.config = config
        origin = urlsplit(origin_url)
        self.origin = (origin.hostname or "127.0.0.1", origin.port or 80)
        self.country = country
        self.cache = EdgeCache(capacity)
        # Made once: a client costs tens of milliseconds of CPU to build (its service model), which
        # a poll every second would pay again and again. boto3's clients are thread-safe.
        self._cloudfront = aws_client("cloudfront", aws_endpoint, region)
        self._logs = aws_client("logs", aws_endpoint, region)
        self._records: list[tuple[int, dict[str, str]]] = []
        self._records_lock = threading.Lock()
        self._stopped = threading.Event()
        self._seen: set[str] = set()
        self._loops: list[threading.Thread] = []
        self.origin_requests = 0
        # What the handler answers for: this listener is the default name's (the viewer's Host).
        self.edge = self
        self.viewer_host: str | None = None
        # The listeners of the distribution's other names, by name.
        self.aliases: dict[str, AliasListener] = {}

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"

    def alias_url(self, name: str) -> str:
        host, port = self.aliases[name].server_address[:2]
        return f"http://{host!s}:{port}/"

    def serve_alias(self, name: str, listening: socket.socket) -> None:
        """Answer the distribution's name ``name`` on ``listening`` (served from start())."""
        self.aliases[name] = AliasListener(self, name, listening)

    @property
    def origin_url(self) -> str:
        host, port = self.origin
        return f"http://{host}:{port}/"

    def start(self) -> None:
        """Serve, flush the logs and apply invalidations, each on a thread of its own."""
        self._seen = {item["Id"] for item in self._invalidations()}
        serving = [(alias.serve_forever, f"edge-{name}") for name, alias in self.aliases.items()]
        for target, name in (
            (self.serve_forever, "edge"),
            *serving,
            (self._flush_loop, "edge-logs"),
            (self._invalidation_loop, "edge-invalidations"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._loops.append(thread)

    def stop(self) -> None:
        self._stopped.set()
        if self._loops:  # shutdown() waits for serve_forever, which never ran otherwise
            self.shutdown()
            for alias in self.aliases.values():
                alias.shutdown()
        self.server_close()
        for alias in self.aliases.values():
            alias.server_close()
        for thread in self._loops:
            if thread is not threading.current_thread():
                thread.join(timeout=5)
        self.flush_logs()

    # ---- answers -------------------------------------------------------------------------------

    def answer(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
        viewer: str,
        *,
        request_id: str = "",
        viewer_host: str | None = None,
    ) -> tuple[Answer, str]:
        """The answer to one viewer request and its result type (Hit, Miss, Error); a request to
        the origin carries the request's id as X-Amz-Cf-Id (its log record's x-edge-request-id).
        ``viewer_host``: the name the viewer asked for (a domain's listener), else its Host."""
        config = self.config
        if config.viewer_request is not None:
            headers = dict(headers)
            host = viewer_host or next(
                (value for name, value in headers.items() if name.lower() == "host"), ""
            )
            config.viewer_request(headers, host)
        if method not in config.allowed_methods:
            return Answer(
                403,
                (("Content-Type", "text/plain"),),
                b"This distribution is not configured to allow the HTTP request method that was used "
                b"for this request.\n",
            ), "Error"
        key = cache_key(path, headers, config.key_headers)
        cached = method in config.policy.cached_methods
        if cached:
            entry = self.cache.get(key)
            if entry is not None:
                age = entry.age(self.cache.clock())
                return Answer(entry.status, (*entry.headers, ("Age", str(age))), entry.body), "Hit"
        answer = self._from_origin(method, path, headers, body, viewer, request_id=request_id)
        if answer is None:
            return Answer(
                502, (("Content-Type", "text/plain"),), b"The request could not be satisfied.\n"
            ), "Error"
        cache_control = next((value for name, value in answer.headers if name.lower() == "cache-control"), "")
        ttl = ttl_for(config.policy, method, answer.status, cache_control)
        # A HEAD's answer has no body: only a GET's is kept (HEAD is answered from it).
        if ttl > 0 and method == "GET":
            self.cache.put(key, Entry(answer.status, answer.headers, answer.body, self.cache.clock(), ttl))
        return answer, "Error" if answer.status >= 400 else "Miss"

    def _from_origin(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes, viewer: str, *, request_id: str
    ) -> Answer | None:
        config = self.config
        # The query reaches the origin only when the origin request policy forwards it; the cache
        # key has no query either way (cache_key).
        target = path if config.forwards_query and "?" in path else path_of(path)
        keyed = {name.lower() for name in config.key_headers}
        sent = {name: value for name, value in headers.items() if name.lower() in config.forwarded | keyed}
        sent.update({name: headers[name] for name in _BODY_HEADERS if name in headers})
        sent.update(viewer_headers(headers, viewer, self.country, config.forwarded))
        sent.update(dict(config.origin_headers))
        sent["Via"] = f"1.1 {config.domain_name} (CloudFront)"
        # CloudFront adds X-Amz-Cf-Id to every origin request: the id its log and its answer's
        # X-Amz-Cf-Id header give the same request ("Request and response behavior for custom
        # origins", "Standard logging": x-edge-request-id).
        if request_id:
            sent["X-Amz-Cf-Id"] = request_id
        self.origin_requests += 1
        connection = http.client.HTTPConnection(*self.origin, timeout=30)
        try:
            connection.request(method, target, body=body or None, headers=sent)
            response = connection.getresponse()
            data = response.read()
        except OSError:
            log.exception("The edge's origin request %s %s failed", method, path)
            return None
        finally:
            connection.close()
        kept = tuple(
            (name, value) for name, value in response.getheaders() if name.lower() not in _NOT_PASSED
        )
        return Answer(response.status, kept, data)

    # ---- logs ----------------------------------------------------------------------------------

    def record(self, fields: dict[str, str]) -> None:
        """Keep one request's log record (only the template's fields), written on the next flush."""
        chosen = {name: fields.get(name, "-") for name in self.config.record_fields}
        with self._records_lock:
            self._records.append((int(time.time() * 1000), chosen))

    def flush_logs(self) -> None:
        with self._records_lock:
            records, self._records = self._records, []
        if not records:
            return
        client = self._logs
        stream = f"edge-{POP}"
        with contextlib.suppress(client.exceptions.ResourceAlreadyExistsException):
            client.create_log_stream(logGroupName=self.config.log_group, logStreamName=stream)
        events = [{"timestamp": at_ms, "message": json.dumps(item)} for at_ms, item in records]
        for start in range(0, len(events), 1000):
            client.put_log_events(
                logGroupName=self.config.log_group,
                logStreamName=stream,
                logEvents=events[start : start + 1000],
            )

    def _flush_loop(self) -> None:
        while not self._stopped.wait(1.0):
            try:
                self.flush_logs()
            except Exception:
                log.exception("The edge's log records could not be written")

    # ---- invalidations -------------------------------------------------------------------------

    def _invalidations(self) -> list[dict[str, Any]]:
        listed = self._cloudfront.list_invalidations(DistributionId=self.config.distribution_id)[
            "InvalidationList"
        ]
        return list(listed.get("Items", []))

    def apply_invalidations(self) -> int:
        """Apply the invalidations not yet applied: how many entries they dropped."""
        client = self._cloudfront
        dropped = 0
        for item in self._invalidations():
            if item["Id"] in self._seen:
                continue
            found = client.get_invalidation(DistributionId=self.config.distribution_id, Id=item["Id"])
            paths = found["Invalidation"]["InvalidationBatch"]["Paths"].get("Items", [])
            dropped += self.cache.invalidate(paths)
            self._seen.add(item["Id"])
        return dropped

    def _invalidation_loop(self) -> None:
        while not self._stopped.wait(1.0):
            try:
                self.apply_invalidations()
            except Exception:
                log.exception("The edge's invalidations could not be read")


class AliasListener(BoundedConnections, ThreadingHTTPServer):
    """One more name of the distribution (an alias: a domain of the stack's ``Domains``) on a
    loopback port of its own: its requests are answered by the edge as requests whose Host is
    that name, which the loopback address cannot say."""

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, edge: LocalEdge, name: str, listening: socket.socket) -> None:
        super().__init__(("127.0.0.1", 0), _EdgeHandler, bind_and_activate=False)
        adopt(self, listening)
        self.edge = edge
        self.viewer_host: str | None = name


class _EdgeHandler(BoundedRequestHandler):
    """Reads each request within a bounded time (a stalled one is answered 408 and closed), chunked
    bodies as HTTP/1.1 frames them, as every listener of the stack does (local_stack/http_reading.py)."""

    server: LocalEdge | AliasListener

    def refusal_answer(self, refused: ReadRefused) -> tuple[int, list[tuple[str, str]], bytes]:
        return (
            refused.status,
            [("Content-Type", "text/plain"), ("X-Cache", "Error from cloudfront")],
            f"{refused.message}\n".encode(),
        )

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("edge: " + format, *args)

    def _handle(self) -> None:
        started = time.time()
        body = self.read_body(PAYLOAD_LIMIT_BYTES)
        headers = {name: value for name, value in self.headers.items()}
        cf_id = request_id()
        edge, viewer_host = self.server.edge, self.server.viewer_host
        answer, result = edge.answer(
            self.command,
            self.path,
            headers,
            body,
            self.client_address[0],
            request_id=cf_id,
            viewer_host=viewer_host,
        )
        path, _, query = self.path.partition("?")
        # Recorded before the answer is sent: a client that has its answer finds its record in the
        # next flush (time-taken is then the time to the answer, not to its last byte).
        edge.record(
            {
                "timestamp(ms)": str(int(started * 1000)),
                "c-ip": self.client_address[0],
                "cs-method": self.command,
                "x-host-header": viewer_host or self.headers.get("Host") or edge.config.domain_name,
                "cs-uri-stem": path,
                "cs-uri-query": query or "-",
                "sc-status": str(answer.status),
                "cs(Referer)": quote(self.headers.get("Referer", ""), safe="") or "-",
                "cs(User-Agent)": quote(self.headers.get("User-Agent", ""), safe="") or "-",
                "x-edge-result-type": result,
                "x-edge-request-id": cf_id,
                "c-country": edge.country,
                "time-taken": f"{time.time() - started:.3f}",
            }
        )
        self.send_response(answer.status)
        for name, value in answer.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.send_header("X-Cache", f"{result} from cloudfront")
        self.send_header("Via", f"1.1 {edge.config.domain_name} (CloudFront)")
        self.send_header("X-Amz-Cf-Pop", POP)
        self.send_header("X-Amz-Cf-Id", cf_id)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _handle
