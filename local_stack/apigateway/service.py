"""API Gateway in the stack: the API keys' durable state. The REST API's server itself is built by
the stack (stack.py), which hands it the Lambda runtime and the access control."""

from pathlib import Path

from local_stack.apigateway.state import ApiKeysState
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.service import Service, Stack


class ApiGatewayService(Service):
    name = "apigateway"

    def durable_state(self, stack: Stack, data_dir: Path) -> ApiKeysState:
        return ApiKeysState(ACCOUNT_ID, stack.resources.region)
