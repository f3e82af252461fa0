"""Where the client finds the API and its key.

API URL: ``--api-url``, else ``SHORTENER_API_URL``, else the local stack named by ``--local-stack`` /
``SHORTENER_LOCAL_STACK``, else ``api_url`` in the config file, else a running local stack found
where `make run` keeps its data (whatever ports it chose, e.g. ``--api-port 0``), else
http://127.0.0.1:3000/. A stack is found by ``stack.json`` in its data dir, which the stack writes
once it is ready and removes on a clean stop; a file left behind by a killed stack is not trusted:
its process must still exist and its API port must accept a connection.

API key: ``--api-key``, else ``SHORTENER_API_KEY``, else, when the API is a running local stack,
that stack's admin key (from ``stack.json`` in its data dir), else ``api_key`` in the config file.

Config file: ``SHORTENER_CONFIG``, else ``$XDG_CONFIG_HOME/shortener/config.toml`` (by default
``~/.config/shortener/config.toml``), TOML with ``api_url`` and ``api_key``.

Local stacks: ``--local-stack DIR`` or ``SHORTENER_LOCAL_STACK`` names a data dir; otherwise
``.local-stack`` in the current directory and beside this package (where `make run` keeps it)."""

import json
import os
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEFAULT_API_URL = "http://127.0.0.1:3000/"
DISCOVERY_FILE = "stack.json"
_PROJECT_DATA_DIR = Path(__file__).resolve().parent.parent / ".local-stack"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# How long a found stack's API port may take to accept a connection (loopback: far less).
_PROBE_SECONDS = 0.5


class ConfigError(Exception):
    """The config file cannot be read."""


@dataclass(frozen=True)
class LocalStack:
    """A running local stack, as its ``stack.json`` describes it."""

    data_dir: Path
    info: dict[str, Any]

    @property
    def api_url(self) -> str:
        return str(self.info["api_url"])

    @property
    def api_key(self) -> str | None:
        key = self.info.get("api_key")
        return str(key) if key else None

    def serves(self, api_url: str) -> bool:
        """Whether ``api_url`` is this stack's API (loopback host names are one host)."""
        mine, theirs = urlsplit(self.api_url), urlsplit(api_url)
        return (
            (
                (mine.hostname in _LOOPBACK and theirs.hostname in _LOOPBACK)
                or mine.hostname == theirs.hostname
            )
            and mine.port == theirs.port
            and mine.scheme == theirs.scheme
        )

    def running(self) -> bool:
        """Whether the stack that wrote ``stack.json`` still runs: its process exists (when the
        file names it) and its API port accepts a connection. A stack killed with ``kill -9``
        leaves the file behind, and another program may since listen on its port."""
        pid = self.info.get("pid")
        if isinstance(pid, int) and pid > 0:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                pass  # another user's process: it exists
        target = urlsplit(self.api_url)
        try:
            port = target.port or (443 if target.scheme == "https" else 80)
            with socket.create_connection((target.hostname or "127.0.0.1", port), _PROBE_SECONDS):
                return True
        except (OSError, ValueError):
            return False


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file's path (it need not exist)."""
    env = os.environ if environ is None else environ
    if env.get("SHORTENER_CONFIG"):
        return Path(env["SHORTENER_CONFIG"]).expanduser()
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "shortener" / "config.toml"


def read_config(path: Path) -> dict[str, Any]:
    """The config file's settings ({} when there is none)."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from exc


def local_stacks(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> list[LocalStack]:
    """The running local stacks that can be found, first the one asked for."""
    env = os.environ if environ is None else environ
    named = explicit or env.get("SHORTENER_LOCAL_STACK")
    candidates = [Path(named)] if named else [Path.cwd() / ".local-stack", _PROJECT_DATA_DIR]
    found, seen = [], set()
    for data_dir in candidates:
        path = (data_dir / DISCOVERY_FILE).resolve()
        if path in seen:
            continue
        seen.add(path)
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and info.get("api_url"):
            found.append(LocalStack(data_dir, info))
    return found


@dataclass(frozen=True)
class Endpoint:
    """The API to talk to and the key to present (None: send no key)."""

    api_url: str
    api_key: str | None


def resolve_endpoint(
    api_url: str | None,
    api_key: str | None,
    local_stack: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Endpoint:
    """The API URL and key, by the precedence in this module's docstring."""
    env = os.environ if environ is None else environ
    config = read_config(config_path(env))
    stacks = local_stacks(local_stack, env)
    named = bool(local_stack or env.get("SHORTENER_LOCAL_STACK"))
    url = api_url or env.get("SHORTENER_API_URL") or ""
    if not url and named and stacks:
        url = stacks[0].api_url
    url = url or str(config.get("api_url") or "") or _running_stack_url(stacks) or DEFAULT_API_URL
    key = api_key or env.get("SHORTENER_API_KEY") or None
    if key is None:
        local = next((stack for stack in stacks if stack.serves(url)), None)
        key = local.api_key if local else None
    if key is None and config.get("api_key"):
        key = str(config["api_key"])
    return Endpoint(url, key)


def _running_stack_url(stacks: list[LocalStack]) -> str:
    """The API URL of the first of ``stacks`` that still runs ("" when none does)."""
    return next((stack.api_url for stack in stacks if stack.running()), "")
