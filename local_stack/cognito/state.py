"""Cognito's part of the durable state: each user pool's people and groups.

People made while the stack runs (the banner's person, ``aws cognito-idp admin-create-user``,
groups an admin adds) are writes the stack answered: they must survive ``kill -9``. moto keeps them
in memory only. Pools hold few people and change rarely, so each request that changed them
journals the whole set, as one record (as API keys are, apigateway/state.py); replaying the last
record gives the set. Pools, clients and the template's groups come from the template, with the
same ids on every start (cloudformation/resources.py). Tokens are not kept: after a restart a person
signs in again.

Records: ``["cognito-idp", "people", {"<pool id>": {"groups": [...], "users": [...]}}]``."""

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from moto.cognitoidp.models import CognitoIdpBackend, UserStatus, cognitoidp_backends

from local_stack.durability.journal import Record
from local_stack.durability.service import Sink, renamed

log = logging.getLogger(__name__)

SERVICE = "cognito-idp"


class CognitoState:
    """The people and groups of one account and region's user pools."""

    service = SERVICE
    kind = "people"

    def __init__(self, account_id: str, region: str) -> None:
        self.account_id = account_id
        self.region = region
        self._sink: Sink | None = None
        self._journaled: dict[str, Any] | None = None
        self._restored: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def backend(self) -> CognitoIdpBackend:
        return cognitoidp_backends[self.account_id][self.region]

    def record_into(self, sink: Sink | None) -> None:
        with self._lock:
            self._sink = sink
            self._journaled = self._people() if sink is not None else None

    def end_request(self) -> None:
        """Journal the people if this request (or the hosted sign-in) changed them."""
        with self._lock:
            if self._sink is None:
                return
            people = self._people()
            if people != self._journaled:
                self._sink.append([[SERVICE, "people", people]])
                self._journaled = people

    def dump(self) -> Iterator[list[Record]]:
        yield [[SERVICE, "people", self._people()]]

    def after_snapshot(self) -> None:
        """Nothing lives outside the snapshot."""

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        _, operation, people = record
        if operation == "people":
            self._restored = dict(renamed(people, renames))

    def finish_restore(self) -> int:
        """Make the saved groups and people again in the pools the template made."""
        backend = self.backend
        for pool_id, saved in self._restored.items():
            pool = backend.user_pools.get(pool_id)
            if pool is None:
                log.warning("User pool %s is no longer in the template: its people are not restored", pool_id)
                continue
            for group in saved.get("groups", []):
                if group["name"] not in pool.groups:
                    backend.create_group(
                        pool_id,
                        group["name"],
                        group.get("description", ""),
                        None,  # type: ignore[arg-type]
                        group.get("precedence"),
                    )
            for person in saved.get("users", []):
                if pool.users.get(person["username"]) is None:
                    user = backend.admin_create_user(
                        pool_id,
                        person["username"],
                        "SUPPRESS",
                        None,  # type: ignore[arg-type]
                        person.get("attributes", []),
                    )
                    user.id = person.get("id", user.id)
                    user.password = person.get("password")
                    user.status = UserStatus(person.get("status", UserStatus.CONFIRMED.value))
                    user.enabled = bool(person.get("enabled", True))
                for name in person.get("groups", []):
                    if name in pool.groups:
                        backend.admin_add_user_to_group(pool_id, name, person["username"])
        self._restored = {}
        return sum(len(pool.users) for pool in list(backend.user_pools.values()))

    def _people(self) -> dict[str, Any]:
        people: dict[str, Any] = {}
        for pool_id, pool in list(self.backend.user_pools.items()):
            people[pool_id] = {
                "groups": sorted(
                    (
                        {
                            "name": group.group_name,
                            "description": group.description,
                            "precedence": group.precedence,
                        }
                        for group in list(pool.groups.values())
                    ),
                    key=lambda group: str(group["name"]),
                ),
                "users": sorted(
                    (
                        {
                            "username": user.username,
                            "id": user.id,
                            "password": user.password,
                            "status": getattr(user.status, "value", str(user.status)),
                            "enabled": bool(user.enabled),
                            "attributes": list(user.attributes or []),
                            "groups": sorted(group.group_name for group in list(user.groups)),
                        }
                        for user in list(pool.users.values())
                    ),
                    key=lambda user: str(user["username"]),
                ),
            }
        return people
