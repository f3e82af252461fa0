"""The shortener's HTTP API, spoken with the standard library (no dependencies)."""

import http.client
import json
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, override
from urllib.parse import quote, urlencode, urljoin, urlsplit

_TIMEOUT_SECONDS = 60.0
# Blocks of a file sent or received at a time: progress moves, memory stays small.
_BLOCK_BYTES = 1024 * 1024


class ApiError(Exception):
    """The API answered with an error (4xx/5xx): its status, machine word and message."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(f"{message} ({status} {error})")
        self.status = status
        self.error = error
        self.message = message


class UnreachableError(Exception):
    """The API could not be reached at all."""


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes
    link: str = ""

    @property
    def next_url(self) -> str | None:
        """The rel="next" target of the Link header (RFC 8288), if any."""
        for part in self.link.split(","):
            target, _, parameters = part.strip().partition(";")
            if target.startswith("<") and 'rel="next"' in parameters.replace(" ", ""):
                return target[1:-1]
        return None

    def json(self) -> Any:
        return json.loads(self.body)


class ShortenerClient:
    """One deployment of the API, by its base URL."""

    def __init__(self, api_url: str, timeout: float = _TIMEOUT_SECONDS, api_key: str | None = None) -> None:
        self.api_url = api_url if api_url.endswith("/") else api_url + "/"
        self.timeout = timeout
        self.api_key = api_key

    def shorten(
        self, url: str, code: str | None = None, fields: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """POST /: the link {"code", "short_url", "url"} (new or existing); ``fields``: title, tags,
        expires_at, max_clicks."""
        payload = {"url": url, **({"code": code} if code else {}), **(fields or {})}
        return self._call("POST", "", json.dumps(payload).encode(), "application/json").json()  # type: ignore[no-any-return]

    def upload(
        self, csv_bytes: bytes, file_name: str | None = None, domain: str | None = None
    ) -> dict[str, Any]:
        """POST /bulk: the job {"job_id", "total", "status_url"}. With ``file_name``, the file goes
        as a multipart form's file field, as the page sends it, so that the job records its name
        (``file_name`` in GET /jobs/{id} and the jobs list); without, as a text/csv body. ``domain``:
        the job's default domain (rows without a domain cell)."""
        path = "bulk" + (f"?{urlencode({'domain': domain})}" if domain else "")
        if file_name is None:
            return self._call("POST", path, csv_bytes, "text/csv").json()  # type: ignore[no-any-return]
        body, content_type = multipart_file(csv_bytes, file_name)
        return self._call("POST", path, body, content_type).json()  # type: ignore[no-any-return]

    def job(self, job_id: str) -> dict[str, Any]:
        """GET /jobs/{id}: status and counters."""
        return self._call("GET", f"jobs/{quote(job_id, safe='')}").json()  # type: ignore[no-any-return]

    def results(self, job_id: str) -> bytes:
        """GET /jobs/{id}/results: the results CSV, every page of it (large results continue on
        pages linked with rel="next", each with its own header line)."""
        page = self._call("GET", f"jobs/{quote(job_id, safe='')}/results")
        csv = page.body
        while (next_url := page.next_url) is not None:
            page = self._call("GET", _followable(self.api_url, next_url, page.status))
            csv += page.body.split(b"\n", 1)[1] if b"\n" in page.body else b""
        return csv

    def links(self, **query: str) -> dict[str, Any]:
        """GET /links: a page {"links", "next_cursor"} (query: tag, q, owner, domain, limit, cursor)."""
        wanted = {key: value for key, value in query.items() if value}
        return self._call("GET", "links" + (f"?{urlencode(wanted)}" if wanted else "")).json()  # type: ignore[no-any-return]

    def domains(self) -> dict[str, Any]:
        """GET /domains: {"domains": [{"name", "default", "short_url_base", "allowed"}]}."""
        return self._call("GET", "domains").json()  # type: ignore[no-any-return]

    def link(self, code: str) -> dict[str, Any]:
        """GET /links/{code}."""
        return self._call("GET", f"links/{quote(code, safe='')}").json()  # type: ignore[no-any-return]

    def update_link(self, code: str, changes: dict[str, Any]) -> dict[str, Any]:
        """PATCH /links/{code} with the fields to change (url, title, tags, status)."""
        body = json.dumps(changes).encode()
        return self._call("PATCH", f"links/{quote(code, safe='')}", body, "application/json").json()  # type: ignore[no-any-return]

    def qr(self, code: str, image_format: str = "png", size: int | None = None) -> bytes:
        """GET /links/{code}/qr: the link's QR code, PNG or SVG."""
        query = {"format": image_format, **({"size": str(size)} if size else {})}
        accept = "image/png" if image_format == "png" else "image/svg+xml"
        path = f"links/{quote(code, safe='')}/qr?{urlencode(query)}"
        return self._call("GET", path, accept=accept).body

    def delete_link(self, code: str) -> dict[str, Any]:
        """DELETE /links/{code}: the link, now a tombstone."""
        return self._call("DELETE", f"links/{quote(code, safe='')}").json()  # type: ignore[no-any-return]

    def start_batch(self, request: dict[str, Any]) -> dict[str, Any]:
        """POST /links/batch: {"batch_id", "status_url"}."""
        body = json.dumps(request).encode()
        return self._call("POST", "links/batch", body, "application/json").json()  # type: ignore[no-any-return]

    def batch(self, batch_id: str, cursor: str | None = None) -> dict[str, Any]:
        """GET /links/batch/{batch_id}: counts and a page of outcomes (from ``cursor``)."""
        query = f"?{urlencode({'cursor': cursor})}" if cursor else ""
        return self._call("GET", f"links/batch/{quote(batch_id, safe='')}{query}").json()  # type: ignore[no-any-return]

    def block(self, host: str, reason: str = "") -> dict[str, Any]:
        """PUT /blocklist/{host} (admins)."""
        body = json.dumps({"reason": reason}).encode() if reason else None
        return self._call("PUT", f"blocklist/{quote(host, safe='')}", body, "application/json").json()  # type: ignore[no-any-return]

    def unblock(self, host: str) -> None:
        """DELETE /blocklist/{host} (admins)."""
        self._call("DELETE", f"blocklist/{quote(host, safe='')}")

    def audit(self, **query: str) -> dict[str, Any]:
        """GET /audit (admins): a page {"entries", "next_cursor"} (query: from, to, actor, code,
        action, limit, cursor)."""
        wanted = {key: value for key, value in query.items() if value}
        return self._call("GET", "audit" + (f"?{urlencode(wanted)}" if wanted else "")).json()  # type: ignore[no-any-return]

    def webhooks(self, method: str, path: str = "", fields: dict[str, Any] | None = None) -> dict[str, Any]:
        """``method /webhooks[/path]`` with ``fields`` as its JSON body: the answer's JSON ({} for
        a 204)."""
        body = json.dumps(fields).encode() if fields is not None else None
        answer = self._call(
            method, "webhooks" + (f"/{path}" if path else ""), body, "application/json" if body else ""
        )
        return answer.json() if answer.body else {}  # type: ignore[no-any-return]

    def blocklist(self) -> list[dict[str, Any]]:
        """GET /blocklist (admins): the blocked hosts."""
        return list(self._call("GET", "blocklist").json()["hosts"])

    def start_upload(self, file_name: str, size: int, domain: str | None = None) -> dict[str, Any]:
        """POST /bulk/uploads: the job {"job_id", "status_url", "upload": {"method", "url", "headers"}};
        ``domain`` as in :meth:`upload`."""
        payload = json.dumps(
            {"file_name": file_name, "size": size, **({"domain": domain} if domain else {})}
        ).encode()
        return self._call("POST", "bulk/uploads", payload, "application/json").json()  # type: ignore[no-any-return]

    def put_file(self, upload: dict[str, Any], path: Path, progress: Callable[[int], None]) -> None:
        """Send ``path`` with the presigned request ``upload`` (straight to S3), a block at a time;
        ``progress`` hears the bytes sent so far."""
        target = urlsplit(upload["url"])
        connection_type = (
            http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_type(target.netloc, timeout=self.timeout)
        try:
            connection.putrequest(
                upload.get("method", "PUT"), target.path + ("?" + target.query if target.query else "")
            )
            for name, value in upload.get("headers", {}).items():
                connection.putheader(name, value)
            connection.putheader("Content-Type", "text/csv")
            connection.endheaders()
            sent = 0
            with path.open("rb") as source:
                while block := source.read(_BLOCK_BYTES):
                    connection.send(block)
                    sent += len(block)
                    progress(sent)
            answer = connection.getresponse()
            body = answer.read()
        except OSError as exc:
            raise UnreachableError(f"cannot upload to {target.netloc}: {exc}") from exc
        finally:
            connection.close()
        if answer.status >= 300:
            raise ApiError(answer.status, "upload_refused", f"The storage refused the upload: {body[:300]!r}")

    def save_results(self, job_id: str, out: BinaryIO, *, deadline: float) -> int:
        """Write a job's whole results CSV to ``out`` as it arrives: inline pages, or the results
        file the API redirects to (asked for again while it is being written, until ``deadline``).
        The bytes written."""
        url: str | None = urljoin(self.api_url, f"jobs/{quote(job_id, safe='')}/results")
        written = 0
        first = True
        while url is not None:
            try:
                # The opener follows the 303 to the presigned link of the file (without the key).
                request = urllib.request.Request(url, headers=self._key_header({"Accept": "text/csv"}))  # noqa: S310
                with _OPENER.open(request, timeout=self.timeout) as answer:
                    if not first:
                        answer.readline()  # each page repeats the header line
                    while block := answer.read(_BLOCK_BYTES):
                        out.write(block)
                        written += len(block)
                    next_url = Response(answer.status, "", b"", answer.headers.get("Link", "")).next_url
                    url = _followable(url, next_url, answer.status) if next_url is not None else None
                    first = False
            except urllib.error.HTTPError as exc:
                error = _api_error(exc.code, exc.read())
                if error.error != "results_not_ready" or time.monotonic() >= deadline:
                    raise error from exc
                time.sleep(float(exc.headers.get("Retry-After") or 5))
            except (urllib.error.URLError, OSError) as exc:
                raise UnreachableError(f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from exc
        return written

    def link_clicks(self, code: str, **query: str) -> dict[str, Any]:
        """GET /links/{code}/clicks (query: from, to, interval, tz, filters, group_by)."""
        wanted = {key: value for key, value in query.items() if value}
        path = f"links/{quote(code, safe='')}/clicks" + (f"?{urlencode(wanted)}" if wanted else "")
        return self._call("GET", path).json()  # type: ignore[no-any-return]

    def save_click_export(self, query: dict[str, str], out: BinaryIO, *, deadline: float) -> int:
        """Write GET /clicks/export's file to ``out``: asked until the API redirects to the built
        file (202 with Retry-After meanwhile), until ``deadline``. The bytes written."""
        wanted = {key: value for key, value in query.items() if value}
        url = urljoin(self.api_url, "clicks/export" + (f"?{urlencode(wanted)}" if wanted else ""))
        not_ready = ApiError(202, "export_not_ready", "The export was still being built.")
        return self._save_when_built(
            url, "application/json", out, deadline=deadline, retry_after=5.0, not_ready=not_ready
        )

    def top_links(self, **query: str) -> dict[str, Any]:
        """GET /clicks (query: from, to, filters, tag, group_by): the caller's most followed links."""
        wanted = {key: value for key, value in query.items() if value}
        return self._call("GET", "clicks" + (f"?{urlencode(wanted)}" if wanted else "")).json()  # type: ignore[no-any-return]

    def save_job_clicks(self, job_id: str, out: BinaryIO, *, deadline: float) -> int:
        """Write a job's click report CSV to ``out``: inline, or the file the API redirects to once
        built (a 202 is asked again after its Retry-After, until ``deadline``). The bytes written."""
        url = urljoin(self.api_url, f"jobs/{quote(job_id, safe='')}/clicks")
        return self._save_when_built(url, "text/csv", out, deadline=deadline, retry_after=5.0, not_ready=None)

    def save_labels(self, job_id: str, image_format: str, out: BinaryIO, *, deadline: float) -> int:
        """Write a done job's QR labels ZIP to ``out``: asked for until the API redirects to the
        built file (202 with Retry-After meanwhile), until ``deadline``. The bytes written."""
        url = urljoin(self.api_url, f"jobs/{quote(job_id, safe='')}/qr?{urlencode({'format': image_format})}")
        not_ready = ApiError(202, "labels_not_ready", "The labels were still being drawn.")
        return self._save_when_built(
            url, "application/zip", out, deadline=deadline, retry_after=2.0, not_ready=not_ready
        )

    def _save_when_built(
        self,
        url: str,
        accept: str,
        out: BinaryIO,
        *,
        deadline: float,
        retry_after: float,
        not_ready: ApiError | None,
    ) -> int:
        """GET ``url`` into ``out``, asking again after each 202's Retry-After (``retry_after`` when
        it gives none) until ``deadline``, then raising ``not_ready`` (None: the 202's own body as
        an error). The bytes written."""
        while True:
            request = urllib.request.Request(url, headers=self._key_header({"Accept": accept}))  # noqa: S310
            try:
                with _OPENER.open(request, timeout=self.timeout) as answer:
                    if answer.status == 202:
                        if time.monotonic() >= deadline:
                            raise not_ready or _api_error(202, answer.read())
                        time.sleep(float(answer.headers.get("Retry-After") or retry_after))
                        continue
                    written = 0
                    while block := answer.read(_BLOCK_BYTES):
                        out.write(block)
                        written += len(block)
                    return written
            except urllib.error.HTTPError as exc:
                raise _api_error(exc.code, exc.read()) from exc
            except (urllib.error.URLError, OSError) as exc:
                raise UnreachableError(f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from exc

    def _key_header(self, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "X-Api-Key": self.api_key} if self.api_key else headers

    def _call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "",
        accept: str = "application/json",
    ) -> Response:
        """One request to ``path`` (relative to the API URL, or absolute)."""
        request = urllib.request.Request(urljoin(self.api_url, path), data=body, method=method)  # noqa: S310
        if content_type:
            request.add_header("Content-Type", content_type)
        request.add_header("Accept", accept)
        if self.api_key:
            request.add_header("X-Api-Key", self.api_key)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310
                headers = answer.headers
                return Response(
                    answer.status, headers.get("Content-Type", ""), answer.read(), headers.get("Link", "")
                )
        except urllib.error.HTTPError as exc:
            raise _api_error(exc.code, exc.read()) from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise UnreachableError(f"cannot reach {self.api_url}: {reason}") from exc


def multipart_file(data: bytes, file_name: str) -> tuple[bytes, str]:
    """A multipart/form-data body holding ``data`` as the file field ``file`` named ``file_name``
    (RFC 7578), and its Content-Type. A name that is not plain ASCII, or holds a quote, goes
    percent-encoded as ``filename*`` (RFC 2231), which the API's reader decodes."""
    boundary = "shortener-" + secrets.token_hex(16)
    while boundary.encode() in data:
        boundary = "shortener-" + secrets.token_hex(16)
    plain = file_name.isascii() and file_name.isprintable() and not any(c in file_name for c in '"\\')
    disposition = f'filename="{file_name}"' if plain else f"filename*=utf-8''{quote(file_name, safe='')}"
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; {disposition}\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return head + data + tail, f"multipart/form-data; boundary={boundary}"


def _followable(base: str, link: str, status: int) -> str:
    """``link`` (relative to ``base``) if it is http(s): urllib would open file:// and ftp:// too,
    and an answer must not make the client read those."""
    target = urljoin(base, link)
    if urlsplit(target).scheme not in ("http", "https"):
        raise ApiError(status, "unsafe_link", f"The results link to {target[:100]} was not followed.")
    return target


class _KeyStaysHome(urllib.request.HTTPRedirectHandler):
    """Follows redirects, but sends the API key only to the API's own host: a results file's
    presigned link (another host, S3) is its own authorisation and must not receive the key."""

    @override
    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        follow = super().redirect_request(req, fp, code, msg, headers, newurl)
        if follow is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            follow.remove_header("X-api-key")  # urllib stores header names capitalize()d
        return follow


_OPENER = urllib.request.build_opener(_KeyStaysHome)


def _api_error(status: int, body: bytes) -> ApiError:
    try:
        fields = json.loads(body)
    except ValueError:
        fields = {}
    if not isinstance(fields, dict):
        fields = {}
    error = str(fields.get("error") or "http_error")
    message = str(fields.get("message") or body.decode("utf-8", "replace")[:200] or f"HTTP {status}")
    return ApiError(status, error, message)
