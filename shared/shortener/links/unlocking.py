"""``POST /{code}``: the password form of a password link. The link is looked at without taking a
click, the password checked against the wrong tries counted so far (shortener.links.protection),
and only the right password's redirect is resolved as a click (taking one of ``max_clicks``)."""

from collections.abc import Callable

from shortener.exceptions import NoPasswordError
from shortener.links.protection import PasswordTries, check_password
from shortener.links.shortening import LinkService, Resolution


class PasswordGate:
    """Opens password links for whoever sends their password."""

    def __init__(self, links: LinkService, tries: PasswordTries) -> None:
        self._links = links
        self._tries = tries

    def unlock(
        self, code: str, password: str, address: str, *, from_bot: Callable[[], bool] = lambda: False
    ) -> Resolution:
        """The redirect behind password link ``code`` for ``password`` sent from ``address``:
        LinkNotFoundError, LinkGoneError or LinkExpiredError as for GET; NoPasswordError (405) for a
        link without a password; WrongPasswordError (401) or TooManyTriesError (429) otherwise."""
        looked = self._links.resolve(code, count_click=False)
        if looked.shown is None or looked.shown.link.password_hash is None:
            raise NoPasswordError(f"The link '{code}' asks for no password: follow it with GET.")
        check_password(looked.shown.link, password, address, self._tries)
        return self._links.resolve(code, unlocked=True, from_bot=from_bot)
