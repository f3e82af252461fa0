"""Cognito in the stack: the data folder's token signing key, and the people's durable state. The
hosted sign-in's server is built by the stack (stack.py), like the REST API's."""

from pathlib import Path

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cognito import tokens
from local_stack.cognito.state import CognitoState
from local_stack.service import Service, Stack


class CognitoService(Service):
    name = "cognito-idp"

    def __init__(self) -> None:
        self.signing: tokens.Signing | None = None

    def attach(self, stack: Stack) -> None:
        options = stack.options
        tokens.install()
        self.signing = tokens.Signing(
            tokens.signing_key(options.data_dir, options.persist), options.time_scale
        )
        tokens.use(self.signing)

    def durable_state(self, stack: Stack, data_dir: Path) -> CognitoState:
        return CognitoState(ACCOUNT_ID, stack.resources.region)
