"""Packing bulk rows into SQS messages: many consecutive rows to a message, so that queueing,
receiving and counting cost per message, not per row."""

from collections.abc import Mapping, Sequence

from shortener.jobs.message_model import BulkRow, ChunkMessage
from shortener.links.domains import JobDomains


class MessagePacker:
    """Packs consecutive rows into messages of at most ``max_rows`` rows and about ``max_bytes``
    of row text (a single longer row gets a message of its own), numbered from ``first_chunk``
    with rows numbered from ``first_row``. Rows come one at a time, so a file of any length is
    packed with only one message in memory; the cut points depend only on the rows, so packing
    again from a message boundary gives the same messages."""

    def __init__(
        self,
        job_id: str,
        *,
        own_host: str | None,
        max_rows: int,
        max_bytes: int,
        first_chunk: int = 0,
        first_row: int = 1,
        owner: str | None = None,
        own_hosts: Sequence[str] = (),
        defaults: Mapping[str, str] | None = None,
        domains: JobDomains | None = None,
    ) -> None:
        self._job_id = job_id
        self._domains = domains
        self._defaults = dict(defaults or {})
        self._own_host = own_host
        self._owner = owner
        self._own_hosts = list(own_hosts)
        self._max_rows = max_rows
        self._max_bytes = max_bytes
        self.next_chunk = first_chunk
        self._next_row = first_row
        self._batch: list[tuple[str, str]] = []
        self._numbers: list[int] = []
        self._problems: dict[int, str] = {}
        self._attributes: dict[int, dict[str, str]] = {}
        self._size = 0

    def add(
        self,
        url: str,
        code: str,
        attributes: dict[str, str] | None = None,
        *,
        row: int = 0,
        problem: str = "",
    ) -> ChunkMessage | None:
        """Add a row (numbered ``row``, or the next number when 0; ``problem`` when its line could
        not be read; ``attributes``, its link attribute cells); the message that this row closed
        (it starts the next one), if any."""
        # The row's share of the JSON body: two quoted strings, brackets and commas (and its
        # number, problem and attributes, when it has them).
        row_size = len(url.encode()) + len(code.encode()) + 8
        if row:
            row_size += 12
        if problem:
            row_size += len(problem.encode()) + 16
        if attributes:
            row_size += sum(len(name) + len(value.encode()) + 8 for name, value in attributes.items()) + 12
        closed = None
        if self._batch and (len(self._batch) == self._max_rows or self._size + row_size > self._max_bytes):
            closed = self.flush()
        if problem:
            self._problems[len(self._batch)] = problem
        if attributes:
            self._attributes[len(self._batch)] = attributes
        self._batch.append((url, code))
        self._numbers.append(row or self._next_row + len(self._batch) - 1)
        self._size += row_size
        return closed

    def flush(self) -> ChunkMessage | None:
        """The message of the rows added since the last one closed, if any."""
        if not self._batch:
            return None
        first = self._numbers[0]
        # Numbers go in the message only where they do not simply follow the first (blank lines).
        consecutive = self._numbers[-1] - first == len(self._numbers) - 1
        message = ChunkMessage(
            job_id=self._job_id,
            chunk=self.next_chunk,
            first_row=first,
            rows=self._batch,
            own_host=self._own_host,
            own_hosts=self._own_hosts,
            owner=self._owner,
            numbers=[] if consecutive else self._numbers,
            problems=self._problems,
            attributes=self._attributes,
            defaults=self._defaults,
            domains=self._domains,
        )
        self.next_chunk += 1
        self._next_row = self._numbers[-1] + 1
        self._batch, self._numbers, self._problems, self._attributes, self._size = [], [], {}, {}, 0
        return message


def pack_rows(
    job_id: str,
    rows: Sequence[BulkRow],
    *,
    own_host: str | None,
    max_rows: int,
    max_bytes: int,
    owner: str | None = None,
    own_hosts: Sequence[str] = (),
    defaults: Mapping[str, str] | None = None,
    domains: JobDomains | None = None,
) -> list[ChunkMessage]:
    """Consecutive rows packed into messages (see ``MessagePacker``)."""
    packer = MessagePacker(
        job_id,
        own_host=own_host,
        max_rows=max_rows,
        max_bytes=max_bytes,
        owner=owner,
        own_hosts=own_hosts,
        defaults=defaults,
        domains=domains,
    )
    messages = [
        message
        for row in rows
        if (message := packer.add(row.url, row.code, row.attributes, row=row.row, problem=row.problem))
        is not None
    ]
    last = packer.flush()
    return [*messages, last] if last is not None else messages
