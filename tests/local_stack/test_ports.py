"""Taken ports and who holds them: read from a /proc tree as Linux lays it out."""

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_stack.ports import PortHolder, TakenPort, is_free, port_holder, taken_ports

TCP_HEADER = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
)


def fake_proc(tmp_path: Path, tcp_lines: list[str], processes: dict[int, tuple[str, list[str]]]) -> Path:
    """A /proc with net/tcp rows and processes {pid: (command line, socket links of its fds)}."""
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "tcp").write_text(TCP_HEADER + "".join(line + "\n" for line in tcp_lines))
    for pid, (command, links) in processes.items():
        (proc / str(pid) / "fd").mkdir(parents=True)
        (proc / str(pid) / "cmdline").write_bytes(command.replace(" ", "\0").encode() + b"\0")
        for fd, link in enumerate(links):
            (proc / str(pid) / "fd" / str(fd)).symlink_to(link)
    return proc


def tcp_row(port: int, state: str, inode: int) -> str:
    return (
        f"   0: 0100007F:{port:04X} 00000000:0000 {state} 00000000:00000000 00:00000000 00000000"
        f"     0        0 {inode} 1 0000000000000000 100 0 0 10 0"
    )


def test_the_holder_is_the_process_with_the_listening_socket(tmp_path: Path) -> None:
    # Given port 3000 listened on (socket inode 777) by pid 42, and an established connection on
    # port 3000 (inode 555) held by pid 43
    proc = fake_proc(
        tmp_path,
        [tcp_row(3000, "01", 555), tcp_row(3000, "0A", 777)],
        {
            43: ("curl http://127.0.0.1:3000/", ["/dev/null", "socket:[555]"]),
            42: (".venv/bin/python -m local_stack", ["/dev/null", "pipe:[1]", "socket:[777]"]),
        },
    )
    # Then the listener is named, with its command line
    assert port_holder(3000, proc) == PortHolder(42, ".venv/bin/python -m local_stack")


def test_no_listener_no_holder(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, [tcp_row(3001, "0A", 777)], {42: ("x", ["socket:[777]"])})
    assert port_holder(3000, proc) is None


def test_a_holder_that_cannot_be_read_gets_a_command_to_find_it() -> None:
    message = TakenPort(3000, "the API (--api-port)", None).message()
    assert message.startswith("port 3000, the API (--api-port), is already in use by another program")
    assert "lsof -iTCP:3000" in message


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def test_a_port_this_process_listens_on_is_taken_by_this_process(listening: int) -> None:
    assert not is_free(listening)
    [taken] = taken_ports({listening: "the API (--api-port)", 0: "the Lambda endpoint"})
    assert taken.port == listening
    if Path("/proc/net/tcp").exists():
        assert taken.holder is not None
        assert taken.holder.pid == os.getpid()
        assert f"by pid {os.getpid()}: " in taken.message()


def test_a_closed_port_is_free(listening: int) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert is_free(port)
    assert taken_ports({port: "the embedded AWS (--aws-port)"}) == []
