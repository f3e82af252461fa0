"""The user pool's tokens, locally: signed with an RSA key of the data folder's own, valid as long as
the app client says.

moto signs every pool's tokens with one private key that is published in its source
(moto/cognitoidp/resources/jwks-private.json), so anyone could forge a token that verifies against
its JWKS. Here each data folder makes its own 2048-bit key on first start and keeps it (0600) in
``cognito-signing-key.json``; tokens are re-signed with it and moto's JWKS answer
(``/<pool id>/.well-known/jwks.json``) publishes its public half. A token from before a restart
still verifies; another data folder's never does.

moto makes every token valid for an hour. Cognito makes them as valid as the app client's
AccessTokenValidity / IdTokenValidity in its TokenValidityUnits (default: hours) say (AWS:
"Amazon Cognito user pools: token expiration",
https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-tokens-with-identity-providers.html);
here too, divided by the stack's --time-scale as every other emulated period is."""

import base64
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.jwk import RSAKey
from moto.cognitoidp import models, responses

from local_stack.durability.private_files import write_private

log = logging.getLogger(__name__)

SIGNING_KEY_FILE = "cognito-signing-key.json"
_UNIT_SECONDS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}
_VALIDITY = {"access": ("AccessTokenValidity", "AccessToken"), "id": ("IdTokenValidity", "IdToken")}


@dataclass(frozen=True)
class Signing:
    """The key tokens are signed with, and the stack's time scale."""

    key: RSAKey
    time_scale: float = 1.0

    def public_jwks(self) -> dict[str, Any]:
        return {"keys": [{**self.key.as_dict(private=False), "alg": "RS256", "use": "sig"}]}


_lock = threading.Lock()
_signing: Signing | None = None
_original_create_jwt = models.CognitoIdpUserPool.create_jwt
MOTOS_PUBLISHED_JWKS = responses.CognitoIdpJsonWebKeyResponse.json_web_key


def signing_key(data_dir: Path, persist: bool) -> RSAKey:
    """The data folder's signing key, made (and kept there, owner-only) on first use."""
    path = data_dir / SIGNING_KEY_FILE
    if persist and path.is_file():
        return RSAKey.import_key(json.loads(path.read_text(encoding="utf-8")))
    key = RSAKey.generate_key(2048, private=True)
    key = RSAKey.import_key(key.as_dict(private=True), parameters={"kid": key.thumbprint()})
    if persist:
        write_private(path, json.dumps(key.as_dict(private=True)))
    return key


def use(signing: Signing | None) -> None:
    """Sign this process's user pools' tokens with ``signing`` from now on (install() first);
    None: moto's own key again."""
    global _signing  # noqa: PLW0603 - moto's classes are process-wide; so is its key
    with _lock:
        _signing = signing
    responses.CognitoIdpJsonWebKeyResponse.json_web_key = (
        json.dumps(signing.public_jwks()).encode() if signing is not None else MOTOS_PUBLISHED_JWKS
    )


def public_jwks() -> dict[str, Any]:
    """The JWKS of the key in use (moto's own when use() was not called)."""
    signing = _signing
    if signing is None:
        return dict(json.loads(responses.CognitoIdpJsonWebKeyResponse.json_web_key))
    return signing.public_jwks()


def install() -> None:
    """Re-sign moto's tokens with the key given to use(), valid for the client's validity
    (idempotent; without use() moto's own behaviour stays)."""
    models.CognitoIdpUserPool.create_jwt = _create_jwt  # type: ignore[method-assign]


def _create_jwt(  # noqa: PLR0917 - moto's signature
    self: models.CognitoIdpUserPool,
    client_id: str,
    username: str,
    token_use: str,
    expires_in: int = 60 * 60,
    extra_data: dict[str, Any] | None = None,
) -> tuple[str, int]:
    token, expires_in = _original_create_jwt(self, client_id, username, token_use, expires_in, extra_data)
    signing = _signing
    if signing is None:
        return token, expires_in
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    seconds = _validity_seconds(self, client_id, token_use, expires_in, signing.time_scale)
    claims["exp"] = int(claims["iat"]) + seconds
    resigned = jwt.encode({"kid": signing.key.kid, "alg": "RS256", "typ": "JWT"}, claims, signing.key)
    return resigned, seconds


def _validity_seconds(
    pool: models.CognitoIdpUserPool, client_id: str, token_use: str, default: int, time_scale: float
) -> int:
    client = pool.clients.get(client_id)
    seconds = default
    if client is not None and token_use in _VALIDITY:
        value_name, unit_name = _VALIDITY[token_use]
        config = client.extended_config
        if config.get(value_name) not in (None, ""):
            unit = str((config.get("TokenValidityUnits") or {}).get(unit_name, "hours"))
            seconds = int(float(config[value_name]) * _UNIT_SECONDS.get(unit, 3600))
    return max(1, int(seconds / time_scale))


def backend(account_id: str, region: str) -> models.CognitoIdpBackend:
    """moto's cognito-idp of one account and region (in this process)."""
    return models.cognitoidp_backends[account_id][region]
