"""The shortener's HTTP API, spoken with the standard library (no dependencies)."""

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

_TIMEOUT_SECONDS = 60.0


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

    def shorten(self, url: str, code: str | None = None) -> dict[str, Any]:
        """POST /: the link {"code", "short_url", "url"} (new or existing)."""
        payload = {"url": url, **({"code": code} if code else {})}
        return self._call("POST", "", json.dumps(payload).encode(), "application/json").json()  # type: ignore[no-any-return]

    def upload(self, csv_bytes: bytes) -> dict[str, Any]:
        """POST /bulk: the job {"job_id", "total", "status_url"}."""
        return self._call("POST", "bulk", csv_bytes, "text/csv").json()  # type: ignore[no-any-return]

    def job(self, job_id: str) -> dict[str, Any]:
        """GET /jobs/{id}: status and counters."""
        return self._call("GET", f"jobs/{quote(job_id, safe='')}").json()  # type: ignore[no-any-return]

    def results(self, job_id: str) -> bytes:
        """GET /jobs/{id}/results: the results CSV, every page of it (large results continue on
        pages linked with rel="next", each with its own header line)."""
        page = self._call("GET", f"jobs/{quote(job_id, safe='')}/results")
        csv = page.body
        while (next_url := page.next_url) is not None:
            target = urljoin(self.api_url, next_url)
            if urlsplit(target).scheme not in ("http", "https"):
                # urllib would open file:// and ftp:// too: an answer must not make us read those.
                raise ApiError(
                    page.status, "unsafe_link", f"The results link to {target[:100]} was not followed."
                )
            page = self._call("GET", target)
            csv += page.body.split(b"\n", 1)[1] if b"\n" in page.body else b""
        return csv

    def links(self, **query: str) -> dict[str, Any]:
        """GET /links: a page {"links", "next_cursor"} (query: tag, q, owner, limit, cursor)."""
        wanted = {key: value for key, value in query.items() if value}
        return self._call("GET", "links" + (f"?{urlencode(wanted)}" if wanted else "")).json()  # type: ignore[no-any-return]

    def link(self, code: str) -> dict[str, Any]:
        """GET /links/{code}."""
        return self._call("GET", f"links/{quote(code, safe='')}").json()  # type: ignore[no-any-return]

    def update_link(self, code: str, changes: dict[str, Any]) -> dict[str, Any]:
        """PATCH /links/{code} with the fields to change (url, title, tags, status)."""
        body = json.dumps(changes).encode()
        return self._call("PATCH", f"links/{quote(code, safe='')}", body, "application/json").json()  # type: ignore[no-any-return]

    def delete_link(self, code: str) -> dict[str, Any]:
        """DELETE /links/{code}: the link, now a tombstone."""
        return self._call("DELETE", f"links/{quote(code, safe='')}").json()  # type: ignore[no-any-return]

    def block(self, host: str, reason: str = "") -> dict[str, Any]:
        """PUT /blocklist/{host} (admins)."""
        body = json.dumps({"reason": reason}).encode() if reason else None
        return self._call("PUT", f"blocklist/{quote(host, safe='')}", body, "application/json").json()  # type: ignore[no-any-return]

    def unblock(self, host: str) -> None:
        """DELETE /blocklist/{host} (admins)."""
        self._call("DELETE", f"blocklist/{quote(host, safe='')}")

    def blocklist(self) -> list[dict[str, Any]]:
        """GET /blocklist (admins): the blocked hosts."""
        return list(self._call("GET", "blocklist").json()["hosts"])

    def _call(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> Response:
        """One request to ``path`` (relative to the API URL, or absolute)."""
        request = urllib.request.Request(urljoin(self.api_url, path), data=body, method=method)  # noqa: S310
        if content_type:
            request.add_header("Content-Type", content_type)
        request.add_header("Accept", "application/json")
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
