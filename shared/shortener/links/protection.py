"""What a password or preview link answers before its destination is chosen, and the password
form's check. No AWS calls: wrong tries are counted behind the ``PasswordTries`` port
(``shortener.links.store_tries``).

Precedence (docs/api.md, "Password and preview links"): a password link answers its password page
to everybody, except that a crawler gets the link's preview when it has one (the preview is what the
owner chose to show publicly; the destination stays behind the password); then a preview link
answers crawlers with its preview; then the link's destination. A person who sent the right
password gets the destination."""

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol

from shortener import clock
from shortener.exceptions import NoPasswordError, TooManyTriesError, WrongPasswordError
from shortener.links.model import Link
from shortener.links.passwords import password_matches

# At most this many wrong passwords per link and client within TRIES_WINDOW; then 429.
MAX_WRONG_TRIES = 5
TRIES_WINDOW = timedelta(minutes=15)

Shown = Literal["password_page", "preview"]


@dataclass(frozen=True, slots=True)
class Interception:
    """An answer given instead of the redirect: the password page or the preview, of ``link``."""

    shown: Shown
    link: Link


def intercept(link: Link, *, crawler: Callable[[], bool], unlocked: bool = False) -> Interception | None:
    """What ``link`` answers instead of its destination (None: the destination). ``crawler`` says
    whether the visitor is a crawler or link-preview fetcher (asked only of a link with a preview);
    ``unlocked``: the right password came with the request."""
    if link.password_hash is not None and not unlocked:
        if link.preview is not None and crawler():
            return Interception("preview", link)
        return Interception("password_page", link)
    if link.preview is not None and not unlocked and crawler():
        return Interception("preview", link)
    return None


class PasswordTries(Protocol):
    """Wrong passwords per link and client, shared by every function instance."""

    def wrong_tries(self, code: str, client: str, now: datetime) -> tuple[int, datetime | None]:
        """How many wrong tries the client made in its current window, and when that window ends."""
        ...

    def add_wrong_try(self, code: str, client: str, now: datetime, window: timedelta) -> None:
        """Count one more wrong try (a new window of ``window`` when none is running)."""
        ...


def client_key(link: Link, address: str) -> str:
    """The client as the tries are counted: a digest of its address keyed by the link's password
    hash, so that the clicks table alone never gives the address back (an unkeyed digest of an
    IPv4 address is undone by trying them all). A new password starts the counts anew."""
    key = (link.password_hash or link.code).encode()
    return hmac.new(key, f"{link.code}\n{address}".encode(), hashlib.sha256).hexdigest()[:32]


def check_password(link: Link, password: str, address: str, tries: PasswordTries) -> None:
    """Nothing when ``password`` opens ``link``. NoPasswordError (405) for a link without one;
    TooManyTriesError (429, with the seconds to wait) after MAX_WRONG_TRIES wrong ones from this
    client within TRIES_WINDOW; WrongPasswordError (401) for a wrong one, which is counted."""
    if link.password_hash is None:
        raise NoPasswordError(f"The link '{link.code}' asks for no password: follow it with GET.")
    client = client_key(link, address)
    now = clock.now()
    count, window_ends = tries.wrong_tries(link.code, client, now)
    if count >= MAX_WRONG_TRIES and window_ends is not None:
        wait = max(int((window_ends - now).total_seconds()) + 1, 1)
        raise TooManyTriesError(
            f"Too many wrong passwords for this link; try again in {wait} seconds.", retry_after=wait
        )
    if not password_matches(password, link.password_hash):
        tries.add_wrong_try(link.code, client, now, TRIES_WINDOW)
        raise WrongPasswordError("That is not the link's password.")
