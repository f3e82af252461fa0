"""The command-line client's API key: where it comes from, that it is sent, what a refusal says;
and how keys are listed."""

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from shortener.access.model import ApiKey
from shortener_cli import config
from shortener_cli.config import DEFAULT_API_URL, Endpoint, LocalStack, resolve_endpoint
from shortener_cli.keys import format_keys
from shortener_cli.main import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, main
from tests.cli.test_main import FakeApi


class KeyedApi(FakeApi):
    """POST / that wants the X-Api-Key "good" (and records what it was sent)."""

    seen: list[str | None] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        KeyedApi.seen.append(self.headers.get("X-Api-Key"))
        if self.headers.get("X-Api-Key") == "good":
            self._json(201, {"code": "abc", "short_url": "http://sho.rt/abc", "url": "https://a/"})
        elif self.headers.get("X-Api-Key") is None:
            self._json(403, {"error": "missing_api_key", "message": "This route needs an API key."})
        else:
            self._json(403, {"error": "invalid_api_key", "message": "The API key is not valid."})


@pytest.fixture
def api_url() -> Iterator[str]:
    KeyedApi.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), KeyedApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No key or config from the machine running the tests; an empty config dir and cwd."""
    for name in ("SHORTENER_API_KEY", "SHORTENER_API_URL", "SHORTENER_CONFIG", "SHORTENER_LOCAL_STACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    # Not the stack a developer may be running in this checkout.
    monkeypatch.setattr(config, "_PROJECT_DATA_DIR", tmp_path / "project" / ".local-stack")
    return tmp_path


def local_stack_dir(
    root: Path, api_url: str, api_key: str = "local-key", name: str = "data", pid: int | None = None
) -> Path:
    data_dir = root / name
    data_dir.mkdir(exist_ok=True)
    info = {"api_url": api_url, "api_key": api_key, **({"pid": pid} if pid is not None else {})}
    (data_dir / "stack.json").write_text(json.dumps(info))
    return data_dir


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (any more)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def finished_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def write_config(root: Path, text: str) -> None:
    (root / "config" / "shortener").mkdir(parents=True, exist_ok=True)
    (root / "config" / "shortener" / "config.toml").write_text(text)


def test_the_key_comes_from_the_flag_then_the_environment_then_the_local_stack_then_the_config(
    clean_env: Path,
) -> None:
    data_dir = str(local_stack_dir(clean_env, "http://127.0.0.1:3999/"))
    write_config(clean_env, 'api_key = "config-key"\n')
    local = "http://localhost:3999/"
    assert (
        resolve_endpoint(local, "flag-key", data_dir, {"SHORTENER_API_KEY": "env-key"}).api_key == "flag-key"
    )
    env = {"SHORTENER_API_KEY": "env-key", "XDG_CONFIG_HOME": str(clean_env / "config")}
    assert resolve_endpoint(local, None, data_dir, env).api_key == "env-key"
    env = {"XDG_CONFIG_HOME": str(clean_env / "config")}
    assert resolve_endpoint(local, None, data_dir, env).api_key == "local-key"
    # Another API than the local stack's gets the config's key
    assert resolve_endpoint("https://sho.rt/", None, data_dir, env).api_key == "config-key"


def test_the_api_url_comes_from_the_config_when_not_given(clean_env: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(clean_env / "config")}
    assert resolve_endpoint(None, None, None, env).api_url == DEFAULT_API_URL
    write_config(clean_env, 'api_url = "https://sho.rt/"\napi_key = "k"\n')
    assert resolve_endpoint(None, None, None, env) == resolve_endpoint("https://sho.rt/", "k", None, env)


def test_a_running_stack_is_found_where_make_run_keeps_it_whatever_its_port(
    api_url: str, clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stack on a port of its own choosing (make run ARGS="--api-port 0")
    local_stack_dir(clean_env, api_url, "good", name=".local-stack", pid=os.getpid())
    # When the client is given neither a URL nor a key, it finds the stack and its key
    assert main(["shorten", "https://a/"]) == EXIT_OK
    assert KeyedApi.seen == ["good"]
    assert capsys.readouterr().out == "http://sho.rt/abc\n"
    # And the URL and key given still win
    env = {"XDG_CONFIG_HOME": str(clean_env / "config"), "SHORTENER_API_URL": "https://sho.rt/"}
    assert resolve_endpoint(None, None, None, env) == resolve_endpoint("https://sho.rt/", None, None, {})


@pytest.mark.parametrize("stale", ["process ended", "port closed"])
def test_a_stack_json_left_by_a_killed_stack_is_not_trusted(
    api_url: str, clean_env: Path, stale: str
) -> None:
    env = {"XDG_CONFIG_HOME": str(clean_env / "config")}
    if stale == "process ended":
        local_stack_dir(clean_env, api_url, name=".local-stack", pid=finished_pid())
    else:
        local_stack_dir(clean_env, closed_port_url(), name=".local-stack", pid=os.getpid())
    assert resolve_endpoint(None, None, None, env) == Endpoint(DEFAULT_API_URL, None)


def test_a_named_stack_wins_over_the_config_and_a_found_one(api_url: str, clean_env: Path) -> None:
    write_config(clean_env, 'api_url = "https://sho.rt/"\napi_key = "k"\n')
    local_stack_dir(clean_env, api_url, name=".local-stack", pid=os.getpid())
    named = local_stack_dir(clean_env, "http://127.0.0.1:3999/", "named-key", name="other")
    env = {"XDG_CONFIG_HOME": str(clean_env / "config")}
    assert resolve_endpoint(None, None, str(named), env) == Endpoint("http://127.0.0.1:3999/", "named-key")
    # The config's API, when given, comes before a stack found by itself
    assert resolve_endpoint(None, None, None, env) == Endpoint("https://sho.rt/", "k")


def test_a_local_stack_serves_its_own_port_under_any_loopback_name() -> None:
    stack = LocalStack(Path("."), {"api_url": "http://127.0.0.1:3000/"})
    assert stack.serves("http://localhost:3000/")
    assert not stack.serves("http://127.0.0.1:3001/")
    assert not stack.serves("https://sho.rt/")


def test_the_key_is_sent_as_x_api_key(
    api_url: str, clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--api-url", api_url, "--api-key", "good", "shorten", "https://a/"]) == EXIT_OK
    assert KeyedApi.seen == ["good"]
    assert capsys.readouterr().out == "http://sho.rt/abc\n"


def test_the_local_stacks_key_is_found_by_itself(
    api_url: str, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHORTENER_LOCAL_STACK", str(local_stack_dir(clean_env, api_url, "good")))
    assert main(["--api-url", api_url, "shorten", "https://a/"]) == EXIT_OK
    assert KeyedApi.seen == ["good"]


@pytest.mark.parametrize(
    ("key", "error"), [([], "missing_api_key"), (["--api-key", "bad"], "invalid_api_key")]
)
def test_a_refused_key_says_where_a_key_goes(
    api_url: str, clean_env: Path, capsys: pytest.CaptureFixture[str], key: list[str], error: str
) -> None:
    assert main(["--api-url", api_url, *key, "shorten", "https://a/"]) == EXIT_REFUSED
    message = capsys.readouterr().err
    assert f"(403 {error})" in message
    assert "--api-key" in message and "SHORTENER_API_KEY" in message


def test_an_unreadable_config_file_is_a_usage_error(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(clean_env, "api_key = \n")
    assert main(["shorten", "https://a/"]) == EXIT_USAGE
    assert "config.toml" in capsys.readouterr().err


def test_keys_without_a_local_stack_say_how_to_find_one(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--local-stack", str(clean_env / "none"), "keys", "list"]) == EXIT_UNREACHABLE
    assert "--stack NAME" in capsys.readouterr().err


def test_keys_are_listed_by_id_never_by_key() -> None:
    created = datetime(2025, 1, 2, 3, 4, tzinfo=UTC)
    keys = [
        ApiKey(
            key_id="0123456789ab",
            key_hash="h" * 64,
            name="ci",
            owner_id="team-a",
            role="admin",
            created_at=created,
            usage_key="secretusage",
        ),
        ApiKey(
            key_id="ba9876543210",
            key_hash="h" * 64,
            name="old",
            owner_id="bob",
            role="member",
            created_at=created,
            usage_key="u",
            revoked=True,
            revoked_at=datetime(2025, 2, 1, tzinfo=UTC),
        ),
    ]
    table = format_keys(keys).splitlines()
    assert table[0].split() == ["KEY", "ID", "NAME", "OWNER", "ROLE", "CREATED", "STATUS"]
    assert table[1].split() == ["0123456789ab", "ci", "team-a", "admin", "2025-01-02", "03:04", "active"]
    assert table[2].endswith("revoked 2025-02-01 00:00")
    assert "secretusage" not in format_keys(keys)
    assert format_keys([]) == "No keys."
