"""The embedded AWS: moto's threaded server, with two fixes for running it for hours under load.

- Requests to services whose moto backends are not thread-safe run one at a time. moto's DynamoDB
  deep-copies a table in TransactWriteItems while other request threads write to it ("dictionary
  changed size during iteration"). SQS has its own locks and must stay concurrent, since
  ReceiveMessage long-polls for up to 20 s.
- moto records every model instance it ever creates (deep copies included) for its dashboard, so each
  TransactWriteItems would keep a copy of the whole table and every message ever sent would stay in
  memory: gigabytes within minutes of bulk work. The records are dropped after each request.
- Only the tools of this machine are answered: no CORS, no moto admin API (local_only.py).
- TransactWriteItems deep-copies every table it touches to roll back on failure, so each
  transaction costs time in proportion to the table's size: bulk work slowed to a crawl as the links
  table grew. Here the transaction remembers only the items it touches and restores those.
- moto's SQS scans every message of a queue (reading the clock twice per message) for each message a
  ReceiveMessage hands out, and three times for each message sent, so a queue's every request cost
  time in proportion to its backlog, and a receive its square: with a bulk job's few thousand
  messages queued, three quarters of the embedded AWS's time went there. Here those scans read the
  clock once and the retention check reads the queue's setting directly.
- Requests are read within bounds, with chunked bodies read whole, and a bounded number of
  connections served at once, as on every listener of the local stack (local_stack/http_reading.py);
  a refusal is answered in the JSON error shape of AWS's JSON services.
- moto's GetQueueAttributes reads the clock again for each count it answers, so a message whose
  visibility ended between two readings was in neither count: a queue holding one message could
  answer 0 visible, 0 in flight. Here one request reads the clock once, so each message is counted
  once, as it stood at that moment.

moto is pinned in pyproject.toml; the patches below depend on its DynamoDB and SQS backends'
internals, and tests/local_stack/embedded/test_server.py checks that they still hold."""

import contextvars
import copy
import io
import json
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

import moto.dynamodb.models as dynamodb_models
import moto.sqs.models as sqs_models
from moto.core.model_instances import model_data
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table
from moto.moto_api._internal.recorder.models import Recorder
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import ThreadedWSGIServer

from local_stack.embedded.client import FAKE_CREDENTIALS
from local_stack.embedded.local_only import LocalToolsOnly, PresignedExemption
from local_stack.http_reading import BoundedConnections, BoundedRequestHandler, ReadRefused
from local_stack.s3.buckets import PresignedUrlGate

# The service in a SigV4 credential scope: Credential=<key>/<date>/<region>/<service>/aws4_request
_SIGNED_SERVICE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/")
CONCURRENT_SERVICES = frozenset({"sqs"})


class SerialisingMiddleware:
    """Runs each request to a service outside CONCURRENT_SERVICES under one lock."""

    def __init__(self, app: Callable[..., Iterable[bytes]], lock: threading.Lock | None = None) -> None:
        self._app = app
        self._lock = lock or threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        signed = _SIGNED_SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
        try:
            if signed and signed.group(1) in CONCURRENT_SERVICES:
                return list(self._app(environ, start_response))
            # The body is read before the lock is taken: a file of many megabytes uploaded to S3
            # must not hold every other request up while it arrives.
            _buffer_body(environ)
            with self._lock:
                # Drain the body inside the lock: moto may build it lazily.
                return list(self._app(environ, start_response))
        finally:
            _forget_tracked_instances()


def _forget_tracked_instances() -> None:
    """moto's ``reset_model_data``, but a class is assigned a fresh list only when it tracked
    instances: moto records every model instance it creates (copies included) for its dashboard,
    which the local stack does not serve, and assigning to every class of every service on every
    request cost time and invalidated the interpreter's caches of those types."""
    for models in model_data.values():
        for model in models.values():
            if model.instances_tracked:  # type: ignore[attr-defined]
                model.instances_tracked = []  # type: ignore[attr-defined]


class RequestEndHooks:
    """Calls each hook when a request has been served and before its answer is sent (inside the
    serialising lock for serialised services): the durable state journals the request's changes
    there, so that nothing is answered before it is journaled."""

    def __init__(self, app: Callable[..., Iterable[bytes]], hooks: list[Callable[[], None]]) -> None:
        self._app = app
        self._hooks = hooks

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            return list(self._app(environ, start_response))
        finally:
            for hook in self._hooks:
                hook()


def _buffer_body(environ: dict[str, Any]) -> None:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length > 0:
        environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read(length))


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


# A control-plane call moto does not implement, answered by the local stack instead:
# (HTTP method, path pattern, handler returning (status, JSON body)).
ControlRoute = tuple[str, re.Pattern[str], Callable[[re.Match[str]], tuple[int, bytes]]]


class ControlRoutes:
    """Answers the calls in ``routes`` itself (e.g. API Gateway's FlushStageAuthorizersCache, which
    changes the local API Gateway's state, not moto's); everything else goes to moto."""

    def __init__(self, app: Callable[..., Iterable[bytes]], routes: list[ControlRoute]) -> None:
        self._app = app
        self._routes = routes

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        for method, pattern, handler in self._routes:
            found = pattern.fullmatch(environ.get("PATH_INFO", ""))
            if found and environ.get("REQUEST_METHOD") == method:
                status, body = handler(found)
                start_response(f"{status} Local", [("Content-Type", "application/json")])
                return [body]
        return self._app(environ, start_response)


class _BoundedMotoHandler(BoundedRequestHandler, MotoRequestHandler):
    """moto's request handler, reading each request within bounds before moto sees it."""

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        body = self.read_body()
        # werkzeug closes every connection after its answer and then drains what the client sent
        # beyond the body: nothing more is read once the body is.
        self.reading.ended = True
        environ["wsgi.input"] = io.BytesIO(body)
        if body or "CONTENT_LENGTH" in environ or "HTTP_TRANSFER_ENCODING" in environ:
            environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        environ.pop("wsgi.input_terminated", None)
        return environ

    def refusal_answer(self, refused: ReadRefused) -> tuple[int, list[tuple[str, str]], bytes]:
        body = json.dumps({"__type": refused.aws_type, "message": refused.message}).encode()
        return (
            refused.status,
            [("Content-Type", "application/json"), ("x-amzn-ErrorType", refused.aws_type)],
            body,
        )


class _BoundedWsgiServer(BoundedConnections, ThreadedWSGIServer):
    """werkzeug's threaded server, serving a bounded number of connections at once."""


class EmbeddedAws(ThreadedMotoServer):
    """moto's ThreadedMotoServer on loopback, with the serialising middleware in front, and
    ``front`` (the IAM access control) in front of that."""

    def __init__(
        self, port: int, front: Callable[[WsgiApp], WsgiApp] | None = None, admin_api: bool = False
    ) -> None:
        super().__init__(ip_address="127.0.0.1", port=port, verbose=False)
        self._front = front
        self._admin_api = admin_api  # moto's /moto-api/ paths, refused unless asked for
        install_moto_fixes()
        self.control_routes: list[ControlRoute] = []
        self._serialising_lock = threading.Lock()
        self.request_end_hooks: list[Callable[[], None]] = []
        # Wraps moto inside the serialising lock (the DynamoDB capacity model), if set before start().
        self.inner_gate: Callable[[WsgiApp], WsgiApp] | None = None
        # Access key -> secret of the keys whose presigned URLs are checked (PresignedUrlGate): the
        # developer's, and the functions' once the stack has read them from the template.
        self.signing_secrets: dict[str, str] = {
            FAKE_CREDENTIALS["aws_access_key_id"]: FAKE_CREDENTIALS["aws_secret_access_key"]
        }
        # The presigned requests a browser may send (the page's uploads and results downloads):
        # filled by the stack with its functions' keys and its buckets.
        self.presigned_exemption = PresignedExemption()

    def reset(self) -> None:
        """Empty every backend, as moto's /moto-api/reset does, in-process (that path is refused
        over HTTP unless admin_api)."""
        from moto.moto_api._internal.models import moto_api_backend

        with self._serialising_lock:
            moto_api_backend.reset()

    def exclusive(self) -> threading.Lock:
        """The lock that serialised requests hold: holding it holds them off (for a snapshot)."""
        return self._serialising_lock

    def start(self) -> None:
        """Bind, then serve on a thread. Binding here, not in the thread as moto does, makes a taken
        port an OSError now instead of a wait forever for a server that never became ready."""
        inner: WsgiApp = RequestEndHooks(
            PresignedUrlGate(DomainDispatcherApplication(create_backend_app), self.signing_secrets),
            self.request_end_hooks,
        )
        if self.inner_gate is not None:
            inner = self.inner_gate(inner)
        app: WsgiApp = ControlRoutes(
            SerialisingMiddleware(inner, self._serialising_lock), self.control_routes
        )
        if self._front is not None:
            app = self._front(app)
        app = LocalToolsOnly(app, self._admin_api, self.presigned_exemption)
        self._server = _BoundedWsgiServer(self._ip_address, self._port, app, _BoundedMotoHandler)
        self._server_ready_event.set()
        self._thread = threading.Thread(target=self._server.serve_forever, name="embedded-aws", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"


_RECORDER_LOCK = threading.Lock()


def install_moto_fixes() -> None:
    """This module's fixes, in moto's classes (so also for an in-process ``mock_aws``); idempotent.
    The services' own patches are installed by ``local_stack.patches.install_moto_fixes``."""
    install_item_level_transaction_rollback()
    install_whole_recorder_lines()
    install_backlog_independent_sqs()
    install_backend_lookup_per_host()


# Hosts whose service is remembered: a service and region each (the stack uses a handful).
_HOSTS_REMEMBERED = 256


def install_backend_lookup_per_host() -> None:
    """moto's dispatcher finds each request's service by listing its own package folder (a listdir,
    then an isdir per entry) and then trying every service's URL patterns in turn, for every
    request. A host's service never changes: it is looked up once per host here."""
    lookup = DomainDispatcherApplication.get_backend_for_host
    if getattr(lookup, "_per_host", False):
        return
    services: dict[str | None, Any] = {}

    # Called under the dispatcher's own lock (DomainDispatcherApplication.get_application).
    def remembered(self: DomainDispatcherApplication, host: str | None) -> Any:
        if host in services:
            return services[host]
        service = lookup(self, host)
        if len(services) < _HOSTS_REMEMBERED:
            services[host] = service
        return service

    remembered._per_host = True  # type: ignore[attr-defined]
    DomainDispatcherApplication.get_backend_for_host = remembered  # type: ignore[method-assign]


def install_whole_recorder_lines() -> None:
    """moto's request recorder (``--moto-api``; the bulk benchmark counts requests with it) appends
    each request as a JSON line with two writes to a file opened per request, unlocked: requests
    served at the same time (the server is threaded) interleave their lines once an entry outgrows
    the file buffer, and the recording no longer parses. One request records at a time here."""
    if getattr(Recorder._record_request, "_whole_lines", False):
        return
    record = Recorder._record_request

    def record_whole(self: Recorder, request: Any, body: bytes | None = None) -> None:
        with _RECORDER_LOCK:
            record(self, request, body)

    record_whole._whole_lines = True  # type: ignore[attr-defined]
    Recorder._record_request = record_whole  # type: ignore[method-assign]


def install_backlog_independent_sqs() -> None:
    """moto's SQS checks a received message's retention through the queue's whole attribute map,
    whose message counts each scan the queue reading the clock twice per message; ReceiveMessage
    does that for every message it hands out, and SendMessage reads the map for each message sent.
    Here the retention check reads the queue's setting, and the scans read the clock once, with
    the same rules: visible once the clock is past ``visible_at``, delayed while it is before
    ``delayed_until``. A GetQueueAttributes reads it once for all its counts (moto computes the
    attribute map again per count), so none of them sees a message cross its ``visible_at``
    between two readings and miss it in both counts."""
    queue_class, backend_class = sqs_models.Queue, sqs_models.SQSBackend
    if getattr(backend_class.is_message_valid_based_on_retention_period, "_direct", False):
        return
    get_queue_attributes = backend_class.get_queue_attributes

    def now() -> float:
        moment = _SQS_REQUEST_CLOCK.get()
        return sqs_models.unix_time_millis() if moment is None else moment

    def get_queue_attributes_at_one_moment(
        self: sqs_models.SQSBackend, queue_name: str, attribute_names: list[str]
    ) -> dict[str, Any]:
        token = _SQS_REQUEST_CLOCK.set(sqs_models.unix_time_millis())
        try:
            return get_queue_attributes(self, queue_name, attribute_names)
        finally:
            _SQS_REQUEST_CLOCK.reset(token)

    def is_message_valid_based_on_retention_period(
        self: sqs_models.SQSBackend, queue_name: str, message: sqs_models.Message
    ) -> bool:
        retention_seconds = int(self.get_queue(queue_name).message_retention_period)  # type: ignore[attr-defined]
        return retention_seconds + message.sent_timestamp / 1000 > sqs_models.unix_time()  # type: ignore[operator]

    def messages(self: sqs_models.Queue) -> list[sqs_models.Message]:
        moment = now()
        return [m for m in self._messages if moment > m.visible_at and moment >= m.delayed_until]

    def delayed(self: sqs_models.Queue) -> int:
        moment = now()
        return sum(1 for m in self._messages if moment < m.delayed_until)

    def not_visible(self: sqs_models.Queue) -> int:
        moment = now()
        return sum(1 for m in self._messages if moment <= m.visible_at)

    is_message_valid_based_on_retention_period._direct = True  # type: ignore[attr-defined]
    backend_class.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]
    backend_class.get_queue_attributes = get_queue_attributes_at_one_moment  # type: ignore[method-assign]
    queue_class.messages = property(messages)  # type: ignore[assignment,method-assign]
    queue_class.approximate_number_of_messages_delayed = property(delayed)  # type: ignore[assignment,method-assign]
    queue_class.approximate_number_of_messages_not_visible = property(not_visible)  # type: ignore[assignment,method-assign]


# The moment a GetQueueAttributes request reads its counts at (None outside one).
_SQS_REQUEST_CLOCK: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "sqs_request_clock", default=None
)
_IN_TRANSACTION: contextvars.ContextVar[bool] = contextvars.ContextVar("in_transaction", default=False)


class _CopyWithoutTables:
    """Stands in for the copy module inside moto's DynamoDB backend: during a transaction a table
    "copy" is the table itself (its rollback is a no-op), and the touched items are restored instead."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if isinstance(value, Table) and _IN_TRANSACTION.get():
            return value
        return copy.deepcopy(value, memo)


def install_item_level_transaction_rollback() -> None:
    """Make TransactWriteItems roll back the items it touched instead of whole-table copies."""
    if getattr(DynamoDBBackend.transact_write_items, "_item_level", False):
        return
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        try:
            saved = _touched_items(self, transact_items)
        except Exception:
            return original(self, transact_items)  # moto reports what is wrong with the request
        token = _IN_TRANSACTION.set(True)
        try:
            return original(self, transact_items)
        except Exception:
            _restore(self, saved)
            raise
        finally:
            _IN_TRANSACTION.reset(token)

    transact_write_items._item_level = True  # type: ignore[attr-defined]
    dynamodb_models.copy = _CopyWithoutTables()  # type: ignore[assignment]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _touched_items(
    backend: DynamoDBBackend, transact_items: list[dict[str, Any]]
) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(table, key, the item's attributes before the transaction or None) for each item touched."""
    saved = []
    for entry in transact_items:
        operation, request = next(iter(entry.items()))
        table_name = request["TableName"]
        if operation == "Put":
            table = backend.get_table(table_name)
            keys = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
            key = {name: request["Item"][name] for name in keys}
        else:
            key = request["Key"]
        current = backend.get_item(table_name, key)
        saved.append((table_name, key, copy.deepcopy(current.to_json()["Attributes"]) if current else None))
    return saved


def _restore(
    backend: DynamoDBBackend, saved: list[tuple[str, dict[str, Any], dict[str, Any] | None]]
) -> None:
    for table_name, key, attributes in reversed(saved):
        if attributes is None:
            backend.delete_item(table_name, key)
        else:
            backend.put_item(table_name, attributes)
