"""API Gateway's part of the durable state: the API keys and which usage plans they are in.

A key made while the stack runs (``shortener keys create``, the admin key) is a write the stack
answered, like a link: it must survive ``kill -9``. moto keeps keys in memory only, and the key's
secret is nowhere else (the keys table holds its hash). Keys are few and change rarely, so each
request that changed them journals the whole set, as one record; replaying the last record gives
the set. Usage plans come from the template and are named there; keys are tied to them by name,
since a plan's id changes with every start.

Records: ``["apigateway", "keys", [{"name", "value", "enabled", "description", "plans"}, ...]]``."""

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from moto.apigateway.models import APIGatewayBackend, apigateway_backends

from local_stack.durability.journal import Record
from local_stack.durability.service import Sink

log = logging.getLogger(__name__)

SERVICE = "apigateway"


class ApiKeysState:
    """The API keys of one account and region, with the names of their usage plans."""

    service = SERVICE
    kind = "api keys"

    def __init__(self, account_id: str, region: str) -> None:
        self.account_id = account_id
        self.region = region
        self._sink: Sink | None = None
        self._journaled: list[dict[str, Any]] | None = None
        self._restored: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def backend(self) -> APIGatewayBackend:
        return apigateway_backends[self.account_id][self.region]

    def record_into(self, sink: Sink | None) -> None:
        with self._lock:
            self._sink = sink
            self._journaled = self._keys() if sink is not None else None

    def end_request(self) -> None:
        """Journal the keys if this request changed them (a comparison of a few small dicts)."""
        with self._lock:
            if self._sink is None:
                return
            keys = self._keys()
            if keys != self._journaled:
                self._sink.append([[SERVICE, "keys", keys]])
                self._journaled = keys

    def dump(self) -> Iterator[list[Record]]:
        yield [[SERVICE, "keys", self._keys()]]

    def after_snapshot(self) -> None:
        """Nothing lives outside the snapshot."""

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        _, operation, keys = record
        if operation == "keys":
            self._restored = list(keys)

    def finish_restore(self) -> int:
        """Create the saved keys that do not exist yet (same values, new ids) in their plans."""
        backend = self.backend
        existing = {key.value for key in backend.keys.values()}
        plan_ids = {plan.name: plan_id for plan_id, plan in backend.usage_plans.items()}
        for saved in self._restored:
            if saved["value"] in existing:
                continue
            key = backend.create_api_key(
                {
                    "name": saved["name"],
                    "value": saved["value"],
                    "enabled": saved["enabled"],
                    "description": saved.get("description"),
                }
            )
            for plan_name in saved["plans"]:
                if plan_name in plan_ids:
                    backend.create_usage_plan_key(
                        plan_ids[plan_name], {"keyId": key.id, "keyType": "API_KEY"}
                    )
                else:
                    log.warning(
                        "API key %s: usage plan %r is no longer in the template", saved["name"], plan_name
                    )
        self._restored = []
        return len(backend.keys)

    def _keys(self) -> list[dict[str, Any]]:
        backend = self.backend
        plans_of: dict[str, list[str]] = {}
        for plan_id, keys in list(backend.usage_plan_keys.items()):
            plan = backend.usage_plans.get(plan_id)
            for key_id in list(keys):
                if plan is not None:
                    plans_of.setdefault(key_id, []).append(str(plan.name))
        return sorted(
            (
                {
                    "name": key.name,
                    "value": key.value,
                    "enabled": bool(key.enabled),
                    "description": key.description,
                    "plans": sorted(plans_of.get(key.id, [])),
                }
                for key in list(backend.keys.values())
            ),
            key=lambda saved: str(saved["value"]),
        )
