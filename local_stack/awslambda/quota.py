"""Lambda's account concurrency, as AWS keeps it: `GetAccountSettings` (which moto lacks) answers the
account's concurrency quota and what is left unreserved, and a function may not reserve so much
that fewer than 100 executions stay unreserved. AWS refuses such a reservation with
"Specified ReservedConcurrentExecutions for function decreases account's
UnreservedConcurrentExecution below its minimum value of [100]." (Lambda Developer Guide,
"Configuring reserved concurrency": "Lambda requires at least 100 unreserved concurrency"); a
CloudFormation stack that asks for it fails to deploy.

The quota is ``MOTO_LAMBDA_CONCURRENCY_QUOTA`` (moto's own setting, which its
PutFunctionConcurrency checks), 1,000 when unset: the default quota of an AWS account (new accounts
may start lower; `make deploy` checks the real figure before deploying)."""

import json
import os
from typing import Any

from moto.awslambda import urls
from moto.awslambda.exceptions import InvalidParameterValueException
from moto.awslambda.models import LambdaBackend
from moto.awslambda.responses import LambdaResponse

DEFAULT_QUOTA = 1_000
MIN_UNRESERVED = 100
_ACCOUNT_SETTINGS_PATH = r"{0}/(?P<api_version>[^/]+)/account-settings/?$"


def quota() -> int:
    """The account's concurrent executions quota."""
    return int(os.environ.get("MOTO_LAMBDA_CONCURRENCY_QUOTA") or DEFAULT_QUOTA)


def reserved(backend: LambdaBackend, *, except_function: str | None = None) -> int:
    """The executions the account's functions reserve."""
    return sum(
        int(function.reserved_concurrency)
        for function in backend.list_functions()
        if function.reserved_concurrency and function.function_name != except_function
    )


def install() -> None:
    """Patch moto (idempotent): before the embedded AWS builds its URL map."""
    if _ACCOUNT_SETTINGS_PATH in urls.url_paths:
        return
    urls.url_paths[_ACCOUNT_SETTINGS_PATH] = LambdaResponse.dispatch
    LambdaResponse.get_account_settings = _get_account_settings  # type: ignore[attr-defined]
    create = LambdaBackend.create_function

    def create_function(self: LambdaBackend, spec: dict[str, Any]) -> Any:
        wanted = spec.get("ReservedConcurrentExecutions")
        if wanted is not None and quota() - reserved(self) - int(wanted) < MIN_UNRESERVED:
            raise InvalidParameterValueException(
                "Specified ReservedConcurrentExecutions for function decreases account's "
                f"UnreservedConcurrentExecution below its minimum value of [{MIN_UNRESERVED}]."
            )
        return create(self, spec)

    LambdaBackend.create_function = create_function  # type: ignore[method-assign]


def _get_account_settings(self: LambdaResponse) -> tuple[int, dict[str, str], str]:
    limit = quota()
    body = {
        "AccountLimit": {
            "TotalCodeSize": 80_530_636_800,
            "CodeSizeUnzipped": 262_144_000,
            "CodeSizeZipped": 52_428_800,
            "ConcurrentExecutions": limit,
            "UnreservedConcurrentExecutions": limit - reserved(self.backend),
        },
        "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": len(list(self.backend.list_functions()))},
    }
    return 200, {}, json.dumps(body)
