"""Cognito's hosted sign-in and OAuth 2.0 endpoints for one user pool, on a loopback port of their own
(``--auth-port``): what the page needs to sign a person in with the authorization code grant and
PKCE, at the paths Cognito serves them (AWS: "User pool endpoints and managed login reference",
https://docs.aws.amazon.com/cognito/latest/developerguide/cognito-userpools-server-contract-reference.html):

- ``GET /oauth2/authorize``: the client and redirect_uri are checked first (an unknown client or a
  redirect_uri that is not one of the client's CallbackURLs gets an error page, never a redirect);
  then response_type=code, PKCE with S256 and the scopes (errors redirect with ``error=``); then the
  sign-in form. ``POST /login``: the password checked against moto's user; a code bound to the
  client, redirect_uri and challenge, single-use, good for 5 minutes; ``302`` to
  ``<redirect_uri>?code=&state=``. Between the two, the pool's post-authentication trigger
  (triggers.py): when it fails, so does the sign-in (the form again, with its error).
- ``POST /oauth2/token``: ``authorization_code`` (the verifier's SHA-256 must be the challenge) and
  ``refresh_token`` grants; answers ``{id_token, access_token, refresh_token, expires_in,
  token_type}``; CORS for the origins of the pool's callback URLs.
- ``POST /oauth2/revoke``: the refresh token and every token issued from it stop working (GetUser
  refuses them), as Cognito's RevokeToken does.
- ``GET /logout``: ``302`` to a logout_uri that is one of the client's LogoutURLs.
- ``GET /.well-known/openid-configuration`` and ``/.well-known/jwks.json``.

Tokens are moto's (so GetUser knows them), signed with the data folder's key (tokens.py)."""

import base64
import hashlib
import hmac
import html
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from moto.cognitoidp.models import CognitoIdpBackend, CognitoIdpUserPool, CognitoIdpUserPoolClient, UserStatus

from local_stack.cognito.triggers import (
    POST_AUTHENTICATION,
    InvokeTrigger,
    TriggerFailed,
    post_authentication_event,
    trigger_arn,
)
from local_stack.http_reading import BoundedConnections
from local_stack.ports import LISTEN_BACKLOG, adopt

CODE_SECONDS = 300
_MAX_FORM_BYTES = 64 * 1024
_PAGE_HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # No form-action: browsers apply it to the redirect that follows the form, to the page's origin.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
}


@dataclass(frozen=True)
class PendingCode:
    """An authorization code, until it is exchanged or expires."""

    client_id: str
    redirect_uri: str
    challenge: str
    username: str
    expires_at: float


class SignInError(Exception):
    """An OAuth error answered as JSON (``{"error": ...}``)."""

    def __init__(self, error: str, status: int = 400) -> None:
        super().__init__(error)
        self.error = error
        self.status = status


class HostedSignIn(BoundedConnections, ThreadingHTTPServer):
    """The hosted sign-in of one user pool."""

    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        backend: Callable[[], CognitoIdpBackend],
        pool_id: str,
        listening: socket.socket,
        *,
        jwks: Callable[[], dict[str, Any]],
        exclusive: Callable[[], AbstractContextManager[Any]] = nullcontext,
        on_change: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        invoke_trigger: InvokeTrigger | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler, bind_and_activate=False)
        adopt(self, listening)
        self._backend = backend
        self.pool_id = pool_id
        self.jwks = jwks
        self.exclusive = exclusive
        self.on_change = on_change
        self.clock = clock
        self._invoke_trigger = invoke_trigger
        self._codes: dict[str, PendingCode] = {}
        self._codes_lock = threading.Lock()

    @property
    def url(self) -> str:
        """The base URL, without a trailing slash (as SIGN_IN_URL is)."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def pool(self) -> CognitoIdpUserPool:
        return self._backend().describe_user_pool(self.pool_id)

    @property
    def issuer(self) -> str:
        region = self.pool_id.split("_", 1)[0]
        return f"https://cognito-idp.{region}.amazonaws.com/{self.pool_id}"

    def client(self, client_id: str) -> CognitoIdpUserPoolClient | None:
        return self.pool.clients.get(client_id) if client_id else None

    def allowed_origins(self) -> set[str]:
        """The origins of every callback URL of the pool's clients (the pages that may call the
        token and revoke endpoints from a browser)."""
        origins = set()
        for client in list(self.pool.clients.values()):
            for url in client.extended_config.get("CallbackURLs") or []:
                parts = urlsplit(str(url))
                origins.add(f"{parts.scheme}://{parts.netloc}")
        return origins

    # ---- the code grant -----------------------------------------------------------------------

    def check_password(self, username: str, password: str) -> str | None:
        """The username if the password is the user's and the user may sign in, else None."""
        with self.exclusive():
            user = self.pool._get_user(username)
            if user is None or not user.enabled or user.status != UserStatus.CONFIRMED:
                return None
            if not hmac.compare_digest(str(user.password or "").encode(), password.encode()):
                return None
            return str(user.username)

    def after_authentication(self, username: str, client_id: str) -> None:
        """The pool's post-authentication trigger, if it has one and functions run: synchronous,
        after the password was checked and before a code is handed out; TriggerFailed fails the
        sign-in."""
        if self._invoke_trigger is None:
            return
        with self.exclusive():
            pool = self.pool
            function_arn = trigger_arn(pool, POST_AUTHENTICATION)
            if not function_arn:
                return
            event = post_authentication_event(pool, self.pool_id.split("_", 1)[0], username, client_id)
        self._invoke_trigger(function_arn, event)

    def new_code(self, client_id: str, redirect_uri: str, challenge: str, username: str) -> str:
        code = secrets.token_urlsafe(32)
        with self._codes_lock:
            now = self.clock()
            self._codes = {key: value for key, value in self._codes.items() if value.expires_at > now}
            self._codes[code] = PendingCode(client_id, redirect_uri, challenge, username, now + CODE_SECONDS)
        return code

    def exchange_code(self, form: dict[str, str]) -> dict[str, Any]:
        """Tokens for a code: single-use (taken out before it is checked), unexpired, of this
        client and redirect_uri, its challenge the S256 of the verifier (RFC 7636 section 4.6)."""
        with self._codes_lock:
            pending = self._codes.pop(form.get("code", ""), None)
        if pending is None or pending.expires_at <= self.clock():
            raise SignInError("invalid_grant")
        if form.get("client_id") != pending.client_id or form.get("redirect_uri") != pending.redirect_uri:
            raise SignInError("invalid_grant")
        verifier = form.get("code_verifier", "")
        if not 43 <= len(verifier) <= 128:
            raise SignInError("invalid_grant")
        if not hmac.compare_digest(s256(verifier), pending.challenge):
            raise SignInError("invalid_grant")
        with self.exclusive():
            pool = self.pool
            refresh, origin_jti = pool.create_refresh_token(pending.client_id, pending.username)
            access, expires_in = pool.create_access_token(pending.client_id, pending.username, origin_jti)
            id_token, _ = pool.create_id_token(pending.client_id, pending.username, origin_jti)
        self.on_change()
        return _tokens(access, id_token, expires_in, refresh)

    def refresh(self, form: dict[str, str]) -> dict[str, Any]:
        token = form.get("refresh_token", "")
        with self.exclusive():
            pool = self.pool
            entry = pool.refresh_tokens.get(token)
            if entry is None or entry[0] != form.get("client_id"):
                raise SignInError("invalid_grant")
            access, id_token, expires_in = pool.create_tokens_from_refresh_token(token)
        self.on_change()
        return _tokens(access, id_token, expires_in)

    def revoke(self, form: dict[str, str]) -> None:
        """Revoke a refresh token and the tokens issued from it (RFC 7009: an unknown token is no
        error)."""
        token = form.get("token", "")
        with self.exclusive():
            pool = self.pool
            entry = pool.refresh_tokens.get(token)
            if entry is None:
                return
            if entry[0] != form.get("client_id"):
                raise SignInError("unauthorized_client")
            pool.refresh_tokens[token] = None
            origin = entry[2]
            for issued in (pool.access_tokens, pool.id_tokens):
                for value in list(issued):
                    if _claims(value).get("origin_jti") == origin:
                        issued.pop(value, None)
        self.on_change()

    def openid_configuration(self) -> dict[str, Any]:
        base = self.url
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{base}/oauth2/authorize",
            "token_endpoint": f"{base}/oauth2/token",
            "revocation_endpoint": f"{base}/oauth2/revoke",
            "end_session_endpoint": f"{base}/logout",
            "jwks_uri": f"{base}/.well-known/jwks.json",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid", "email", "phone", "profile"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }


def s256(verifier: str) -> str:
    """BASE64URL(SHA256(verifier)) without padding: PKCE's S256 challenge of a verifier."""
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _tokens(access: str, id_token: str, expires_in: int, refresh: str | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"id_token": id_token, "access_token": access}
    if refresh is not None:
        answer["refresh_token"] = refresh
    return {**answer, "expires_in": expires_in, "token_type": "Bearer"}


def _claims(token: str) -> dict[str, Any]:
    try:
        payload = token.split(".")[1]
        return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
    except (IndexError, ValueError):
        return {}


class _Handler(BaseHTTPRequestHandler):
    server: HostedSignIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    # ---- routing ------------------------------------------------------------------------------

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = _single(parse_qs(url.query))
        if url.path == "/oauth2/authorize":
            self._authorize(query, url.query)
        elif url.path == "/logout":
            self._logout(query)
        elif url.path == "/.well-known/openid-configuration":
            self._json(200, self.server.openid_configuration())
        elif url.path in ("/.well-known/jwks.json", f"/{self.server.pool_id}/.well-known/jwks.json"):
            self._json(200, self.server.jwks())
        else:
            self._page(404, "Not found", "<p>This address is not one of the hosted sign-in's.</p>")

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_FORM_BYTES:
            self._json(413, {"error": "invalid_request"})
            return
        form = _single(parse_qs(self.rfile.read(length).decode("utf-8", "replace")))
        if url.path == "/login":
            self._login(_single(parse_qs(url.query)), url.query, form)
            return
        try:
            if url.path == "/oauth2/token":
                self._json(200, self._token(form), cors=True)
            elif url.path == "/oauth2/revoke":
                self.server.revoke(form)
                self._send(200, b"", {"Cache-Control": "no-store"}, cors=True)
            else:
                self._json(404, {"error": "not_found"})
        except SignInError as exc:
            self._json(exc.status, {"error": exc.error}, cors=True)

    def do_OPTIONS(self) -> None:
        """CORS preflight of the token and revoke endpoints."""
        headers = {
            "Access-Control-Allow-Methods": "POST",
            "Access-Control-Allow-Headers": "Content-Type",
            "Access-Control-Max-Age": "600",
        }
        self._send(204, b"", headers, cors=True)

    # ---- the endpoints ------------------------------------------------------------------------

    def _authorize(self, query: dict[str, str], raw_query: str, error: str = "", username: str = "") -> None:
        client = self.server.client(query.get("client_id", ""))
        if client is None:
            self._page(400, "Sign-in error", "<p>The sign-in link names no app client of this user pool.</p>")
            return
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in (client.extended_config.get("CallbackURLs") or []):
            self._page(
                400,
                "Sign-in error",
                "<p>The address to return to (redirect_uri) is not one of this app client's callback "
                "URLs.</p>",
            )
            return
        refusal = _request_refusal(query, client)
        if refusal:
            self._redirect(redirect_uri, {"error": refusal, "state": query.get("state")})
            return
        self._page(200 if not error else 400, "Sign in", _form(raw_query, error, username))

    def _login(self, query: dict[str, str], raw_query: str, form: dict[str, str]) -> None:
        client = self.server.client(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        if client is None or redirect_uri not in (client.extended_config.get("CallbackURLs") or []):
            self._authorize(query, raw_query)  # says which, as a page
            return
        if _request_refusal(query, client):
            self._authorize(query, raw_query)
            return
        username = form.get("username", "").strip()
        signed_in = self.server.check_password(username, form.get("password", ""))
        if signed_in is None:
            self._authorize(query, raw_query, "Incorrect username or password.", username)
            return
        try:
            self.server.after_authentication(signed_in, client.id)
        except TriggerFailed as exc:
            self._authorize(query, raw_query, f"PostAuthentication failed with error {exc}.", username)
            return
        code = self.server.new_code(client.id, redirect_uri, query["code_challenge"], signed_in)
        self._redirect(redirect_uri, {"code": code, "state": query.get("state")})

    def _token(self, form: dict[str, str]) -> dict[str, Any]:
        if self.server.client(form.get("client_id", "")) is None:
            raise SignInError("invalid_client", 401)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            return self.server.exchange_code(form)
        if grant == "refresh_token":
            return self.server.refresh(form)
        raise SignInError("unsupported_grant_type")

    def _logout(self, query: dict[str, str]) -> None:
        client = self.server.client(query.get("client_id", ""))
        logout_uri = query.get("logout_uri", "")
        if client is None or logout_uri not in (client.extended_config.get("LogoutURLs") or []):
            self._page(
                400,
                "Sign-out error",
                "<p>The address to return to (logout_uri) is not one of this app client's sign-out URLs.</p>",
            )
            return
        self._send(302, b"", {"Location": logout_uri, "Cache-Control": "no-store"})

    # ---- answers ------------------------------------------------------------------------------

    def _redirect(self, target: str, params: dict[str, str | None]) -> None:
        given = {key: value for key, value in params.items() if value is not None}
        separator = "&" if "?" in target else "?"
        self._send(
            302, b"", {"Location": f"{target}{separator}{urlencode(given)}", "Cache-Control": "no-store"}
        )

    def _page(self, status: int, title: str, body: str) -> None:
        document = _PAGE.format(title=html.escape(title), body=body)
        self._send(status, document.encode(), dict(_PAGE_HEADERS))

    def _json(self, status: int, document: dict[str, Any], cors: bool = False) -> None:
        headers = {"Content-Type": "application/json", "Cache-Control": "no-store", "Pragma": "no-cache"}
        self._send(status, json.dumps(document).encode(), headers, cors=cors)

    def _send(self, status: int, body: bytes, headers: dict[str, str], cors: bool = False) -> None:
        self.send_response(status)
        origin = self.headers.get("Origin")
        if cors and origin and origin in self.server.allowed_origins():
            headers = {**headers, "Access-Control-Allow-Origin": origin, "Vary": "Origin"}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _single(values: dict[str, list[str]]) -> dict[str, str]:
    return {key: items[0] for key, items in values.items() if items}


def _request_refusal(query: dict[str, str], client: CognitoIdpUserPoolClient) -> str:
    """The OAuth error of an authorization request whose client and redirect_uri are fine."""
    if query.get("response_type") != "code" or "code" not in (
        client.extended_config.get("AllowedOAuthFlows") or []
    ):
        return "unsupported_response_type"
    if not query.get("code_challenge") or query.get("code_challenge_method") != "S256":
        return "invalid_request"
    allowed = set(client.extended_config.get("AllowedOAuthScopes") or [])
    if not set(query.get("scope", "openid").split()) <= allowed:
        return "invalid_scope"
    return ""


def _form(raw_query: str, error: str, username: str) -> str:
    described = ' aria-describedby="sign-in-error" aria-invalid="true"' if error else ""
    alert = f'<p id="sign-in-error" class="error" role="alert">{html.escape(error)}</p>' if error else ""
    return (
        f"{alert}"
        f'<form method="post" action="/login?{html.escape(raw_query)}">'
        '<label for="username">Username</label>'
        f'<input id="username" name="username" autocomplete="username" required autofocus'
        f' value="{html.escape(username)}"{described}>'
        '<label for="password">Password</label>'
        '<input id="password" name="password" type="password" autocomplete="current-password"'
        f" required{described}>"
        '<button type="submit">Sign in</button>'
        "</form>"
        "<p class=\"note\">The local stack's user pool (it emulates Cognito's hosted sign-in).</p>"
    )


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1a1a1a; background: #f4f5f7; }}
main {{ max-width: 22rem; margin: 4rem auto; padding: 2rem; background: #fff; border-radius: 8px; }}
label {{ display: block; margin-top: 1rem; font-weight: 600; }}
input {{ width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #6b6b6b; }}
input:focus, button:focus {{ outline: 3px solid #1d4ed8; outline-offset: 2px; }}
button {{ margin-top: 1.5rem; width: 100%; padding: .6rem; font: inherit; color: #fff; background: #1d4ed8;
  border: 0; border-radius: 4px; cursor: pointer; }}
.error {{ color: #a4161a; font-weight: 600; }}
.note {{ margin-top: 1.5rem; font-size: .875rem; color: #4a4a4a; }}
</style>
</head>
<body>
<main>
<h1>{title}</h1>
{body}
</main>
</body>
</html>
"""
