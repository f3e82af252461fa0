"""The local stack's person: made on first start in the template's user pool (group admin), with a
random password kept in the data folder (owner-only), shown in the banner and the READY line so a
person can sign in to `make run`'s page at once. Made through the embedded AWS's API (as an
admin would with ``aws cognito-idp admin-create-user``), so the durable state journals it."""

import logging
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_stack.durability.private_files import write_private

log = logging.getLogger(__name__)

PERSON_FILE = "sign-in-person"
PERSON_USERNAME = "admin@example.com"
ADMIN_GROUP = "admin"


@dataclass(frozen=True)
class Person:
    username: str
    password: str


def _new_password() -> str:
    # Meets the template's policy (12+ characters, upper and lower case, digits) whatever the draw.
    return f"{secrets.token_urlsafe(18)}-Aa1"


def ensure_person(cognito: Any, pool_id: str, data_dir: Path, persist: bool) -> Person:
    """The person kept in ``data_dir`` if the pool still has them, else one made now (their
    password stored there when ``persist``)."""
    path = data_dir / PERSON_FILE
    if persist and path.is_file():
        username, _, password = path.read_text(encoding="utf-8").strip().partition("\n")
        if username and password and _exists(cognito, pool_id, username):
            return Person(username, password)
    person = Person(PERSON_USERNAME, _new_password())
    if _exists(cognito, pool_id, person.username):
        log.warning("The sign-in person %s has no kept password: setting a new one", person.username)
    else:
        cognito.admin_create_user(
            UserPoolId=pool_id,
            Username=person.username,
            MessageAction="SUPPRESS",
            UserAttributes=[
                {"Name": "email", "Value": person.username},
                {"Name": "email_verified", "Value": "true"},
            ],
        )
    cognito.admin_set_user_password(
        UserPoolId=pool_id, Username=person.username, Password=person.password, Permanent=True
    )
    groups = {group["GroupName"] for group in cognito.list_groups(UserPoolId=pool_id).get("Groups", [])}
    if ADMIN_GROUP in groups:
        cognito.admin_add_user_to_group(UserPoolId=pool_id, Username=person.username, GroupName=ADMIN_GROUP)
    if persist:
        write_private(path, f"{person.username}\n{person.password}\n")
    return person


def _exists(cognito: Any, pool_id: str, username: str) -> bool:
    try:
        cognito.admin_get_user(UserPoolId=pool_id, Username=username)
    except cognito.exceptions.UserNotFoundException:
        return False
    return True
