"""IAM on the local stack: each function's AWS calls are authorised against its own role in the
template, and refused with AWS's own error when the role does not allow them.

- ``policy``: IAM's evaluation logic (wildcards, case, Deny, NotAction/NotResource, conditions).
- ``principals``: each function's role and policies from the SAM-expanded template; its key.
- ``calls``: an API request -> the (action, resource) pairs IAM authorises; AWS's refusal.
- ``guard``: the access control, and the middleware in front of the embedded AWS."""

from local_stack.iam.calls import invoke_call
from local_stack.iam.guard import AccessControl, Signature
from local_stack.iam.principals import Principal, function_credentials, function_principals

__all__ = [
    "AccessControl",
    "Principal",
    "Signature",
    "function_credentials",
    "function_principals",
    "invoke_call",
]
