"""CloudFormation, locally: the SAM template read and expanded, its intrinsic functions and Rules
evaluated, its resources named and created on the embedded AWS.

- ``template``: loading the template and the SAM transform (expand_sam, sam_transform).
- ``intrinsics``: Ref, Fn::* and parameter values (Resolver, parameter_values, ACCOUNT_ID).
- ``deploy``: Rules and parameter constraints checked before anything is created, and moto's
  CloudFormation completed for `sam deploy` against the embedded AWS (install()).
- ``resources``: each resource's physical name and its creation (name_resources, create_resources).
- ``stack_id``: the stack's AWS::StackId UUID, kept in the data dir.

Two ways of deploying share one SAM transform (``template.sam_transform``) and one parameter
evaluation (``intrinsics.parameter_values``): the local stack's, strict (code from the working
tree; a missing or unknown parameter refused at start), and `sam deploy` against moto, not strict
(code from S3; parameters as CloudFormation takes them, judged by ``deploy``'s checks)."""

from local_stack.cloudformation.deploy import check_template_rules
from local_stack.cloudformation.intrinsics import ACCOUNT_ID, IntrinsicError, Resolver, parameter_values
from local_stack.cloudformation.resources import Resources, create_resources, name_resources
from local_stack.cloudformation.stack_id import stack_uuid
from local_stack.cloudformation.template import (
    PROJECT_ROOT,
    TEMPLATE_PATH,
    TemplateError,
    expand_sam,
    load_template,
)

__all__ = [
    "ACCOUNT_ID",
    "PROJECT_ROOT",
    "TEMPLATE_PATH",
    "IntrinsicError",
    "Resolver",
    "Resources",
    "TemplateError",
    "check_template_rules",
    "create_resources",
    "expand_sam",
    "load_template",
    "name_resources",
    "parameter_values",
    "stack_uuid",
]
