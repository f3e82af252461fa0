"""Is a port free, and if not, who holds it: so that a second `make run` says which program is in
the way instead of hanging.

The holder is found the way `ss -ltnp` finds it on Linux: the listening socket's inode in
/proc/net/tcp (and tcp6), then the process whose /proc/<pid>/fd links to ``socket:[<inode>]``.
Elsewhere (macOS has no /proc), or for another user's process (its fds are not readable), the
message names the command that shows it instead."""

import errno
import socket
import socketserver
from dataclasses import dataclass
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in the st column of /proc/net/tcp
# Connections waiting to be accepted by the stack's HTTP servers. Python's http.server default of 5
# resets bursts (of 64 POST / at once, up to 45 were reset); the kernel caps the figure at
# net.core.somaxconn (4096 on current Linux, 128 on macOS).
LISTEN_BACKLOG = 1024


@dataclass(frozen=True)
class PortHolder:
    """A process that listens on a port."""

    pid: int
    command: str


@dataclass(frozen=True)
class TakenPort:
    """A port the stack needs that something else listens on."""

    port: int
    role: str  # what the stack serves there, e.g. "the API (--api-port)"
    holder: PortHolder | None

    def message(self) -> str:
        """One sentence for a person: the port, and the process in the way when it is known."""
        if self.holder is not None:
            held = f"by pid {self.holder.pid}: {self.holder.command}"
        else:
            shown_by = f"`ss -ltnp 'sport = :{self.port}'` or `lsof -iTCP:{self.port}`"
            held = f"by another program ({shown_by} shows which)"
        return f"port {self.port}, {self.role}, is already in use {held}"


def listening_socket(port: int, host: str = "127.0.0.1") -> socket.socket:
    """A socket listening on ``host:port`` (0: a free port), bound as the stack's HTTP servers bind
    (SO_REUSEADDR, ``LISTEN_BACKLOG``): the stack binds its ports first, so that every part can be
    built knowing the URLs of the others, then hands each socket to its server."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(LISTEN_BACKLOG)
    except BaseException:
        listening.close()
        raise
    return listening


def adopt(server: socketserver.TCPServer, listening: socket.socket) -> None:
    """Make ``server`` (built with ``bind_and_activate=False``) serve on ``listening``."""
    server.socket.close()
    server.socket = listening
    server.server_address = listening.getsockname()


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``host:port`` now (SO_REUSEADDR, as our servers bind, so a
    port in TIME_WAIT after a stop counts as free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def taken_ports(wanted: dict[int, str], proc: Path = Path("/proc")) -> list[TakenPort]:
    """The ports of ``wanted`` (port -> role; port 0 means any free port) that are in use."""
    return [
        TakenPort(port, role, port_holder(port, proc))
        for port, role in wanted.items()
        if port and not is_free(port)
    ]


def port_holder(port: int, proc: Path = Path("/proc")) -> PortHolder | None:
    """The process listening on TCP ``port`` (any address), or None when it cannot be told."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for entry in proc.iterdir():
        if entry.name.isdigit() and wanted & _fd_links(entry):
            return PortHolder(int(entry.name), _command_line(entry))
    return None


def _fd_links(process: Path) -> set[str]:
    """What the process's file descriptors point to (none for another user's process)."""
    try:
        fds = list((process / "fd").iterdir())
    except OSError:  # gone meanwhile, or not ours to read
        return set()
    links = set()
    for fd in fds:
        try:
            links.add(str(fd.readlink()))
        except OSError:  # closed meanwhile (the listing's own descriptor, for one)
            continue
    return links


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            lines = (proc / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
            if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _command_line(process: Path) -> str:
    try:
        arguments = (process / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return "(command line not readable)"
    return " ".join(argument.decode(errors="replace") for argument in arguments) or "(no command line)"
