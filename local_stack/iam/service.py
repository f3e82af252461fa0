"""IAM in the stack: each function's calls authorised against its role in the template, and the
presigned URLs the functions sign checked against their keys."""

from local_stack.embedded.client import FAKE_CREDENTIALS
from local_stack.iam.principals import function_principals
from local_stack.service import Service, Stack


class IamService(Service):
    name = "iam"

    def configure(self, stack: Stack) -> None:
        access, moto = stack.access, stack.moto
        if stack.options.iam:
            principals = function_principals(stack.resources)
            access.load(principals.by_access_key)
            # Presigned URLs the functions sign are checked against their keys' secret, as S3 does.
            moto.signing_secrets.update(dict.fromkeys(principals.by_access_key, stack.function_secret))
            for warning in principals.warnings:
                stack.warn(f"IAM: {warning}")
        # A browser may send only the presigned job-file requests the functions sign (local_only):
        # with their own keys, or (IAM off) with the credentials every function then shares.
        moto.presigned_exemption.signers.update(
            dict.fromkeys(access.principal_keys(), stack.function_secret)
            if stack.options.iam
            else {FAKE_CREDENTIALS["aws_access_key_id"]: FAKE_CREDENTIALS["aws_secret_access_key"]}
        )
