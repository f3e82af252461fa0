"""A user pool's Lambda triggers, locally: the post-authentication trigger, invoked by the hosted
sign-in after it checked a person's password and before it hands out a code, as Cognito invokes it
after authentication and before it issues tokens (AWS: "Post authentication Lambda trigger",
https://docs.aws.amazon.com/cognito/latest/developerguide/user-pool-lambda-post-authentication.html,
and the common parameters of "Customizing user pool workflows with Lambda triggers").

The invocation is synchronous, with the event Cognito sends (``version``, ``triggerSource``
``PostAuthentication_Authentication``, ``region``, ``userPoolId``, ``userName``, ``callerContext``
with ``awsSdkVersion`` and ``clientId``, ``request`` with ``userAttributes`` and ``newDeviceUsed``,
``response`` ``{}``). A function that fails (an error, a timeout, no such function) fails the
sign-in, as on AWS, where the managed login shows "PostAuthentication failed with error ...".
Lambda permissions are not consulted locally (local_stack/README.md, IAM), so the template's
``AWS::Lambda::Permission`` for ``cognito-idp.amazonaws.com`` is what lets AWS's Cognito call it."""

from collections.abc import Callable
from typing import Any

from moto.cognitoidp.models import CognitoIdpUserPool

POST_AUTHENTICATION = "PostAuthentication"
# What Cognito's managed login names as its SDK in the events of the sign-ins it makes.
HOSTED_SDK_VERSION = "aws-sdk-unknown-unknown"


class TriggerFailed(Exception):
    """A trigger's function failed: the sign-in fails with this message."""


# Runs a trigger's function (its ARN, the event) and answers its result; TriggerFailed if it fails.
InvokeTrigger = Callable[[str, dict[str, Any]], Any]


def trigger_arn(pool: CognitoIdpUserPool, trigger: str) -> str:
    """The function ARN the pool's ``LambdaConfig`` names for ``trigger`` ("" where none)."""
    return str((pool.extended_config.get("LambdaConfig") or {}).get(trigger) or "")


def post_authentication_event(
    pool: CognitoIdpUserPool, region: str, username: str, client_id: str
) -> dict[str, Any]:
    """The event of a person's sign-in through the hosted sign-in of ``client_id``."""
    user = pool._get_user(username)
    attributes = {str(item["Name"]): str(item["Value"]) for item in user.attributes}
    return {
        "version": "1",
        "triggerSource": "PostAuthentication_Authentication",
        "region": region,
        "userPoolId": pool.id,
        "userName": str(user.username),
        "callerContext": {"awsSdkVersion": HOSTED_SDK_VERSION, "clientId": client_id},
        "request": {
            "userAttributes": {
                **attributes,
                "cognito:user_status": getattr(user.status, "value", str(user.status)),
            },
            # The pool remembers no devices (the template sets no DeviceConfiguration).
            "newDeviceUsed": False,
        },
        "response": {},
    }
