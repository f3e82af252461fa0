"""SQS's part of the durable state: every message sent, received (its receive count), moved to a
dead-letter queue, deleted or purged.

SQS requests run concurrently in the embedded AWS (a long poll must not hold up the rest), so
changes are journaled as they happen, not when a request ends: a message's record is written before
it is appended to its queue, under the journal's lock, so no receiver can delete a message whose
sending is not journaled yet, and no snapshot can fall between the record and the message. A
deletion is journaled after it is made: if the process dies in between, the message comes back after
a restart, which SQS's at-least-once delivery allows ("Amazon SQS at-least-once delivery", SQS
Developer Guide); so may a FIFO queue's send that moto then drops as a duplicate. Visibility is not
journaled: messages in flight when the stack stopped come back visible, as they would on AWS once
their loop died and the visibility timeout passed; their receive count is kept, so a message that
keeps failing still reaches its dead-letter queue after ``maxReceiveCount`` receives.

Also fixed here, because the journal would otherwise remember a message that moto forgot: moto's
``Queue.delete_message`` rebuilds the message list without its lock, so a message sent at the same
moment could be dropped. The wrapper takes the queue's lock, which ``add_message`` holds to append.

Records: ``["sqs", "add", queue, message]`` (also a move: a message id lives in one queue),
``["sqs", "del", queue, [id, ...]]``, ``["sqs", "recv", queue, [[id, count], ...]]``,
``["sqs", "purge", queue]``, and in snapshots ``["sqs", "messages", queue, [message, ...]]``."""

import base64
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from moto.core.utils import unix_time_millis
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends

from local_stack.durability.journal import Record
from local_stack.durability.service import Sink

log = logging.getLogger(__name__)

SERVICE = "sqs"
_SNAPSHOT_BATCH = 1000
_recording: "SqsState | None" = None
_hooks_lock = threading.Lock()


class SqsState:
    """The messages of every queue of one account and region."""

    service = SERVICE
    kind = "messages"

    def __init__(self, account_id: str, region: str) -> None:
        self.account_id = account_id
        self.region = region
        self._sink: Sink | None = None
        # While restoring: queue name -> message id -> message, and message id -> queue name.
        self._restored: dict[str, dict[str, Message]] = {}
        self._queue_of: dict[str, str] = {}
        self._missing: set[str] = set()

    @property
    def backend(self) -> SQSBackend:
        return sqs_backends[self.account_id][self.region]

    def record_into(self, sink: Sink | None) -> None:
        """Journal every change into ``sink`` from now on; None stops recording."""
        global _recording  # noqa: PLW0603 - moto's classes are global, so is what their hooks report to
        _install_hooks()
        self._sink = sink
        _recording = self if sink is not None else None

    def covers(self, account_id: str, region: str) -> bool:
        return account_id == self.account_id and region == self.region

    def end_request(self) -> None:
        """Nothing waits for the end of a request: SQS changes are journaled as they happen."""

    def dump(self) -> Iterator[list[Record]]:
        """Every message of every queue, in flight or not, in batches of records."""
        for queue in list(self.backend.queues.values()):
            with queue._messages_lock:
                messages = list(queue._messages)
            for start in range(0, len(messages), _SNAPSHOT_BATCH):
                batch = [_message_json(message) for message in messages[start : start + _SNAPSHOT_BATCH]]
                yield [[SERVICE, "messages", queue.name, batch]]

    def after_snapshot(self) -> None:
        """Nothing lives outside the snapshot."""

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        """Replay one record into the queues (which the template already created)."""
        operation, name = record[1], record[2]
        if operation in ("add", "messages"):
            if name not in self.backend.queues:
                if name not in self._missing:
                    self._missing.add(name)
                    log.warning("state: queue %s no longer exists; its saved messages are dropped", name)
                return
            for message in [record[3]] if operation == "add" else record[3]:
                self._forget(message["id"])
                self._restored.setdefault(name, {})[message["id"]] = _message(message)
                self._queue_of[message["id"]] = name
        elif operation == "del":
            for message_id in record[3]:
                self._forget(message_id)
        elif operation == "recv":
            for message_id, count in record[3]:
                message = self._restored.get(self._queue_of.get(message_id, ""), {}).get(message_id)
                if message is not None:
                    message.approximate_receive_count = count
        elif operation == "purge":
            for message_id in self._restored.pop(name, {}):
                self._queue_of.pop(message_id, None)
        else:
            log.warning("state: unknown SQS record %r is skipped", operation)

    def finish_restore(self) -> int:
        """Put the restored messages into their queues; how many there are."""
        total = 0
        for name, messages in self._restored.items():
            queue = self.backend.queues[name]
            with queue._messages_lock:
                queue._messages.extend(messages.values())
                queue._messages_lock.notify_all()
            total += len(messages)
        self._restored.clear()
        self._queue_of.clear()
        return total

    def _forget(self, message_id: str) -> None:
        name = self._queue_of.pop(message_id, None)
        if name is not None:
            self._restored[name].pop(message_id, None)


def _message_json(message: Message) -> dict[str, Any]:
    stored: dict[str, Any] = {"id": message.id, "body": message.body}
    if message.message_attributes:
        stored["attributes"] = {
            name: _attribute_json(value) for name, value in message.message_attributes.items()
        }
    optional = {
        "system_attributes": message.system_attributes,
        "sent": message.sent_timestamp,
        "first_received": message.approximate_first_receive_timestamp,
        "receive_count": message.approximate_receive_count,
        "group_id": message.group_id,
        "deduplication_id": message.deduplication_id,
        "sequence_number": message.sequence_number,
        "delayed_until": message.delayed_until,
    }
    stored.update({key: value for key, value in optional.items() if value})
    return stored


def _attribute_json(value: dict[str, Any]) -> dict[str, Any]:
    # moto keeps a binary attribute's value as bytes; JSON needs text.
    return {
        key + "Base64" if isinstance(item, bytes) else key: (
            base64.b64encode(item).decode("ascii") if isinstance(item, bytes) else item
        )
        for key, item in value.items()
    }


def _attribute(stored: dict[str, Any]) -> dict[str, Any]:
    return {
        key.removesuffix("Base64") if key.endswith("Base64") else key: (
            base64.b64decode(item) if key.endswith("Base64") else item
        )
        for key, item in stored.items()
    }


def _message(stored: dict[str, Any]) -> Message:
    message = Message(stored["id"], stored["body"], stored.get("system_attributes") or None)
    message.message_attributes = {
        name: _attribute(value) for name, value in stored.get("attributes", {}).items()
    }
    message.sent_timestamp = stored.get("sent") or int(unix_time_millis())  # type: ignore[assignment]
    message.approximate_first_receive_timestamp = stored.get("first_received")
    message.approximate_receive_count = stored.get("receive_count", 0)
    message.group_id = stored.get("group_id")
    message.deduplication_id = stored.get("deduplication_id")
    message.sequence_number = stored.get("sequence_number")
    message.delayed_until = stored.get("delayed_until", 0.0)
    return message  # visible at once: its visibility timeout died with the previous run


def _record(records: list[Record]) -> None:
    state = _recording
    sink = state._sink if state is not None else None
    if sink is not None:
        sink.append(records)


def _install_hooks() -> None:
    """Wrap moto's message writers once per process; they report to whichever state is recording."""
    with _hooks_lock:
        if getattr(Queue.add_message, "_durable", False):
            return
        add_message, delete_message = Queue.add_message, Queue.delete_message
        receive_message, purge_queue = SQSBackend.receive_message, SQSBackend.purge_queue

        def recorded_add_message(self: Queue, message: Message) -> None:
            state = _recording
            sink = state._sink if state is not None and state.covers(self.account_id, self.region) else None
            if sink is None:
                add_message(self, message)
                return
            with sink.appending([[SERVICE, "add", self.name, _message_json(message)]]):
                add_message(self, message)

        def recorded_delete_message(self: Queue, receipt_handle: str) -> None:
            with self._messages_lock:
                deleted = [m.id for m in self._messages if m.had_receipt_handle(receipt_handle)]
                delete_message(self, receipt_handle)
            state = _recording
            if deleted and state is not None and state.covers(self.account_id, self.region):
                _record([[SERVICE, "del", self.name, deleted]])

        def recorded_receive_message(
            self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any
        ) -> list[Message]:
            received = receive_message(self, queue_name, *args, **kwargs)
            state = _recording
            if received and state is not None and state.covers(self.account_id, self.region_name):
                counts = [[message.id, message.approximate_receive_count] for message in received]
                _record([[SERVICE, "recv", queue_name, counts]])
            return received

        def recorded_purge_queue(self: SQSBackend, queue_name: str) -> None:
            purge_queue(self, queue_name)
            state = _recording
            if state is not None and state.covers(self.account_id, self.region_name):
                _record([[SERVICE, "purge", queue_name]])

        recorded_add_message._durable = True  # type: ignore[attr-defined]
        Queue.add_message = recorded_add_message  # type: ignore[method-assign]
        Queue.delete_message = recorded_delete_message  # type: ignore[method-assign]
        SQSBackend.receive_message = recorded_receive_message  # type: ignore[method-assign]
        SQSBackend.purge_queue = recorded_purge_queue  # type: ignore[method-assign]
