"""Cognito, as the authorizer asks it: the user pool's signing keys and GetUser.

Both are reached through the cognito-idp endpoint boto3 uses (AWS_ENDPOINT_URL on the local stack),
so the keys are ``<endpoint>/<user pool id>/.well-known/jwks.json``, which on AWS is the issuer's
``/.well-known/jwks.json`` (``https://cognito-idp.<region>.amazonaws.com/<user pool id>``)."""

import json
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

_KEYS_TIMEOUT_SECONDS = 3.0
# A token naming an unknown key may make the container read the keys again, at most this often.
_REFRESH_INTERVAL_SECONDS = 60.0


class PoolKeys:
    """The user pool's JWKS, read once per container (and again for a key it does not have)."""

    def __init__(self, jwks_url: str, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._url = jwks_url
        self._monotonic = monotonic
        self._keys: Mapping[str, Any] | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def key_set(self, *, refresh: bool = False) -> Mapping[str, Any]:
        with self._lock:
            stale = refresh and self._monotonic() - self._read_at >= _REFRESH_INTERVAL_SECONDS
            if self._keys is None or stale:
                # The URL is the template's (https on AWS, the local stack's loopback locally).
                with urllib.request.urlopen(self._url, timeout=_KEYS_TIMEOUT_SECONDS) as answer:  # noqa: S310
                    self._keys = json.loads(answer.read())
                self._read_at = self._monotonic()
            return self._keys


class CognitoUsers:
    """GetUser with an access token: Cognito answers only for a token it still honours. The call is
    unsigned, as Cognito allows for it (the token is the credential), so it needs no IAM."""

    def __init__(self, client: Any = None) -> None:
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = boto3.client("cognito-idp", config=Config(signature_version=UNSIGNED))
        return self._client

    def is_active(self, access_token: str) -> bool:
        try:
            self.client.get_user(AccessToken=access_token)
        except ClientError as exc:
            refused = {"NotAuthorizedException", "UserNotFoundException"}
            if exc.response.get("Error", {}).get("Code") in refused:
                return False
            raise
        return True

    def jwks_url(self, user_pool_id: str) -> str:
        """Where the pool's keys are, on the endpoint this client talks to."""
        return f"{self.client.meta.endpoint_url.rstrip('/')}/{user_pool_id}/.well-known/jwks.json"
