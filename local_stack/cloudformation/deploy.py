"""CloudFormation, completed, for deploying a SAM template into the embedded AWS (moto).

`sam deploy` pointed at moto (``AWS_ENDPOINT_URL=http://localhost:<port>``) creates a change set and
reports success, but moto's CloudFormation does not do what CloudFormation does on the server side:

- it does not run the ``AWS::Serverless-2016-10-31`` transform (SAM CLI leaves the transform to
  CloudFormation), so every ``AWS::Serverless::*`` resource would be an empty record;
- it does not evaluate the template's ``Rules`` (CloudFormation refuses a parameter set that breaks
  an assertion before it creates or changes anything: "Rules syntax", CloudFormation User Guide);
- it has no model for some resource types this project uses (``AWS::CloudWatch::Alarm``,
  ``AWS::SNS::Subscription``, ``AWS::ApiGateway::Stage``, ``AWS::Lambda::EventInvokeConfig``): they
  would be skipped with a warning;
- a stack created through a change set has no outputs (moto builds them before the change set runs);
- ``Fn::Select`` takes only a literal index, where CloudFormation also takes ``Ref`` and
  ``Fn::FindInMap`` ("Fn::Select", CloudFormation User Guide).

``install()`` adds these to moto's CloudFormation in this process, so an embedded AWS that runs in
this process (``EmbeddedAws``, or moto's ``ThreadedMotoServer``) deploys a SAM template the way
CloudFormation would. The SAM transform is aws-sam-translator, the library CloudFormation's own
transform is built from. What still differs from a real deployment is listed in local_stack/README.md
("Deploying to the embedded AWS")."""

import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any

from samtranslator.public.exceptions import InvalidDocumentException

from local_stack.cloudformation import intrinsics
from local_stack.cloudformation.template import sam_transform
from local_stack.resource_provider import Created, ResourceProvider

SAM_TRANSFORM = "AWS::Serverless-2016-10-31"


class RuleViolationError(Exception):
    """A parameter set that one of the template's Rules refuses (the rule's AssertDescription)."""


# ---- Rules --------------------------------------------------------------------------------------


def parameter_values(template: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every declared parameter's value as CloudFormation takes it: the given one, else its
    default (the local stack's own evaluation, not strict)."""
    return dict(intrinsics.parameter_values(template.get("Parameters") or {}, given, strict=False))


def check_rules(
    template: Mapping[str, Any], parameters: Mapping[str, Any], region: str = "us-east-1"
) -> None:
    """Raise RuleViolationError for the first assertion of the template's Rules that ``parameters``
    (every parameter, defaults included) break, as CloudFormation does before any change."""
    for name, rule in (template.get("Rules") or {}).items():
        evaluate = _RuleEvaluator(parameters, region)
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"]):
            continue
        for assertion in rule.get("Assertions", []):
            if not evaluate(assertion["Assert"]):
                description = assertion.get("AssertDescription") or f"Rule {name} failed"
                raise RuleViolationError(" ".join(str(description).split()))


def check_parameters(template: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """Raise RuleViolationError for the first given parameter value that its declaration's
    constraints refuse (Type Number, MinValue, MaxValue, AllowedValues, AllowedPattern, MinLength,
    MaxLength), as CloudFormation does before any change ("Parameters", CloudFormation User Guide).
    The message says what is wrong; ConstraintDescription, when declared, replaces it."""
    for name, value in given.items():
        spec = (template.get("Parameters") or {}).get(name)
        if spec is None:
            continue
        problem = _parameter_problem(spec, str(value))
        if problem:
            raise RuleViolationError(f"Parameter '{name}' {spec.get('ConstraintDescription') or problem}")


def _parameter_problem(spec: Mapping[str, Any], value: str) -> str | None:  # noqa: PLR0911
    if spec.get("Type") == "Number":
        try:
            number = float(value)
        except ValueError:
            return "must be a number"
        if "MinValue" in spec and number < float(spec["MinValue"]):
            return f"must be a number not less than {spec['MinValue']}"
        if "MaxValue" in spec and number > float(spec["MaxValue"]):
            return f"must be a number not greater than {spec['MaxValue']}"
    allowed = spec.get("AllowedValues")
    if allowed is not None and value not in [str(item) for item in allowed]:
        return f"must be one of AllowedValues: {', '.join(str(item) for item in allowed)}"
    if "AllowedPattern" in spec and not re.fullmatch(str(spec["AllowedPattern"]), value):
        return f"must match pattern {spec['AllowedPattern']}"
    if "MinLength" in spec and len(value) < int(spec["MinLength"]):
        return f"must contain at least {spec['MinLength']} characters"
    if "MaxLength" in spec and len(value) > int(spec["MaxLength"]):
        return f"must contain at most {spec['MaxLength']} characters"
    return None


def check_template_rules(
    template: Mapping[str, Any],
    parameters: Mapping[str, Any],
    region: str,
    given: Mapping[str, Any] | None = None,
) -> None:
    """check_parameters (on the ``given`` values) and check_rules for the local stack: a refused
    parameter or a broken rule is a TemplateError, like any template it cannot run."""
    from local_stack.cloudformation.template import TemplateError

    try:
        check_parameters(template, given if given is not None else {})
        check_rules(template, parameters, region)
    except RuleViolationError as exc:
        raise TemplateError(f"The template's Rules refuse these parameters: {exc}") from exc


def condition_values(
    template: Mapping[str, Any], parameters: Mapping[str, Any], region: str = "us-east-1"
) -> dict[str, bool]:
    """Each of the template's Conditions, true or false for ``parameters`` (defaults included)."""
    definitions = template.get("Conditions") or {}
    values: dict[str, bool] = {}

    class _ConditionEvaluator(_RuleEvaluator):
        def __call__(self, node: Any) -> Any:
            if isinstance(node, dict) and list(node) == ["Condition"]:
                return value_of(node["Condition"])
            return super().__call__(node)

    def value_of(name: str) -> bool:
        if name not in values:
            values[name] = bool(_ConditionEvaluator(parameters, region)(definitions[name]))
        return values[name]

    for name in definitions:
        value_of(name)
    return values


class _RuleEvaluator:
    """The rule-specific intrinsic functions ("Rule functions", CloudFormation User Guide). The
    ones about AWS-specific parameter types (Fn::ValueOf, Fn::ValueOfAll, Fn::RefAll) need the
    account's resources and are refused."""

    def __init__(self, parameters: Mapping[str, Any], region: str) -> None:
        self.parameters = parameters
        self.pseudo = {"AWS::Region": region}

    def __call__(self, node: Any) -> Any:  # noqa: PLR0911
        if isinstance(node, list):
            return [self(item) for item in node]
        if not isinstance(node, dict) or len(node) != 1:
            return node if not isinstance(node, int | float) else str(node)
        ((function, argument),) = node.items()
        if function == "Ref":
            if argument in self.pseudo:
                return self.pseudo[argument]
            return self.parameters[argument]
        if function == "Fn::Equals":
            left, right = (self(item) for item in argument)
            return left == right
        if function == "Fn::Not":
            return not self(argument[0])
        if function == "Fn::And":
            return all(self(item) for item in argument)
        if function == "Fn::Or":
            return any(self(item) for item in argument)
        if function == "Fn::Contains":
            options, value = self(argument[0]), self(argument[1])
            return value in options
        if function == "Fn::EachMemberEquals":
            values, wanted = self(argument[0]), self(argument[1])
            return all(value == wanted for value in values)
        if function == "Fn::EachMemberIn":
            values, options = self(argument[0]), self(argument[1])
            return all(value in options for value in values)
        raise RuleViolationError(f"{function} is not supported in Rules by the embedded CloudFormation")


# ---- the SAM transform ----------------------------------------------------------------------------


def apply_sam_transform(
    template: dict[str, Any], parameters: Mapping[str, Any], stack_name: str, region: str, account_id: str
) -> dict[str, Any]:
    """The template as CloudFormation's AWS::Serverless-2016-10-31 transform leaves it. Code
    locations stay as they are (a packaged template points at S3)."""
    values = {
        **parameters,
        "AWS::StackName": stack_name,
        "AWS::Region": region,
        "AWS::AccountId": account_id,
        "AWS::Partition": "aws",
    }
    try:
        return sam_transform(template, values, region)
    except InvalidDocumentException as exc:
        causes = "; ".join(str(cause) for cause in exc.causes)
        raise RuleViolationError(f"Transform {SAM_TRANSFORM} failed with: {causes}") from exc


def declares_sam_transform(template: Mapping[str, Any]) -> bool:
    """Whether the template asks for the SAM transform (a name or a list of names)."""
    declared = template.get("Transform")
    names = declared if isinstance(declared, list) else [declared]
    return SAM_TRANSFORM in names


def process_template(
    body: str, given: Mapping[str, Any], stack_name: str, region: str, account_id: str
) -> str:
    """What CloudFormation does with a submitted template before it plans changes: Rules first,
    then the SAM transform. The processed template, as JSON."""
    from moto.cloudformation.models import Stack

    template = Stack.parse_template(body)
    parameters = parameter_values(template, given)
    check_rules(template, parameters, region)
    if declares_sam_transform(template):
        template = apply_sam_transform(template, parameters, stack_name, region, account_id)
    return json.dumps(template)


# ---- moto, completed ------------------------------------------------------------------------------


def install(providers: Iterable[ResourceProvider]) -> None:
    """Complete moto's CloudFormation in this process, with ``providers`` (the registered ones:
    ``local_stack.registry.RESOURCE_PROVIDERS``) for the types moto lacks (idempotent)."""
    from moto.cloudformation import parsing

    _install_processing()
    _register_models(providers)
    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()


@cache
def _install_processing() -> None:
    from moto.cloudformation import models, parsing

    backend = models.CloudFormationBackend
    create_stack, create_change_set = backend.create_stack, backend.create_change_set
    execute_change_set = backend.execute_change_set

    def processing_create_stack(
        self: Any, name: str, template: str, parameters: dict[str, Any], **kwargs: Any
    ) -> Any:
        processed = _processed(self, name, template, parameters)
        return create_stack(self, name, processed, parameters, **kwargs)

    def processing_create_change_set(
        self: Any,
        stack_name: str,
        change_set_name: str,
        template: str,
        parameters: dict[str, str],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        processed = _processed(self, stack_name, template, parameters)
        return create_change_set(self, stack_name, change_set_name, processed, parameters, *args, **kwargs)

    def execute_and_publish_outputs(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        execute_change_set(self, change_set_name, stack_name)
        change_set = self.describe_change_set(change_set_name)
        stack = self.stacks[change_set.stack_id]
        stack._parse_template()
        stack.output_map = stack._create_output_map()

    # A resource whose Condition is false is no resource on AWS; moto keeps a None in its map.
    models.Stack.stack_resources = property(  # type: ignore[method-assign, assignment]
        lambda self: [resource for resource in self.resource_map.values() if resource is not None]
    )
    backend.create_stack = processing_create_stack  # type: ignore[method-assign, assignment]
    backend.create_change_set = processing_create_change_set  # type: ignore[method-assign]
    backend.execute_change_set = execute_and_publish_outputs  # type: ignore[method-assign]
    parsing.clean_json = _select_with_any_index(parsing.clean_json)  # type: ignore[assignment]
    parsing.ResourceMap._delete_resource = _gone_with_its_owner(  # type: ignore[method-assign]
        parsing.ResourceMap._delete_resource
    )
    _import_rest_api_bodies()
    _physical_ids_as_ref_gives_them()


def _processed(backend: Any, stack_name: str, template: str, parameters: Mapping[str, Any]) -> str:
    from moto.cloudformation.exceptions import ValidationError

    try:
        return process_template(template, parameters, stack_name, backend.region_name, backend.account_id)
    except RuleViolationError as exc:
        raise ValidationError(stack_name, message=str(exc)) from exc


def _select_with_any_index(clean_json: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def clean(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, dict) and isinstance(resource_json.get("Fn::Select"), list):
            index, items = resource_json["Fn::Select"]
            if isinstance(index, dict):
                resource_json = {"Fn::Select": [clean(index, resources_map), items]}
        return clean_json(resource_json, resources_map)

    return clean


def _import_rest_api_bodies() -> None:
    """A RestApi's Body (the OpenAPI document SAM writes) defines its resources and methods, as
    CloudFormation imports it (and its title names the API when Name is absent); moto ignores it."""
    from moto.apigateway.models import RestAPI, apigateway_backends

    create = RestAPI.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create_with_body(
        cls: Any,
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        properties = cloudformation_json["Properties"]
        body = properties.get("Body")
        if body and "Name" not in properties:
            properties["Name"] = body.get("info", {}).get("title", resource_name)
        api = create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        if body:
            backend = apigateway_backends[account_id][region_name]
            backend.put_rest_api(api.id, body, fail_on_warnings=False, mode="overwrite")
        return api

    RestAPI.create_from_cloudformation_json = classmethod(create_with_body)  # type: ignore[assignment]


def _physical_ids_as_ref_gives_them() -> None:
    """Ref of a deployment is its id, of a layer version its ARN (CloudFormation's resource
    reference); moto's models have none, so a stage would get the model object as its deployment."""
    from moto.apigateway.models import Deployment
    from moto.awslambda.models import LayerVersion

    Deployment.physical_resource_id = property(lambda self: self.id)  # type: ignore[attr-defined]
    LayerVersion.physical_resource_id = property(lambda self: self.arn)  # type: ignore[attr-defined]


class _ProvidedModel:
    """A moto CloudFormation model made from a ResourceProvider (one class per type, made by
    :func:`_register_models`). A mixin: moto finds models among the direct subclasses of
    CloudFormationModel only. An instance is one created resource."""

    PROVIDER: ResourceProvider

    def __init__(self, created: Created) -> None:
        self.created = created

    @property
    def physical_resource_id(self) -> str:
        return self.created.physical_id

    @classmethod
    def cloudformation_type(cls) -> str:
        return cls.PROVIDER.TYPE

    @classmethod
    def cloudformation_name_type(cls) -> str:
        return cls.PROVIDER.NAME_PROPERTY

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return True

    def get_cfn_attribute(self, attribute_name: str) -> str:
        return self.created.attributes[attribute_name]

    @classmethod
    def create_from_cloudformation_json(
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "_ProvidedModel":
        properties = cloudformation_json["Properties"]
        return cls(cls.PROVIDER.create(resource_name, properties, account_id, region_name))

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> "_ProvidedModel":
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )

    @classmethod
    def delete_from_cloudformation_json(
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        return None

    def delete(self, account_id: str, region: str) -> None:
        self.PROVIDER.delete(self.created, account_id, region)


_MODELS: dict[str, type] = {}


def _register_models(providers: Iterable[ResourceProvider]) -> None:
    """A CloudFormation model for each provider's type (the types moto's CloudFormation lacks), so the
    resource is created in moto's own backend for its service, as on AWS, by the same code `make
    run` uses. Defining a subclass of CloudFormationModel is what registers it with moto."""
    from moto.core.common_models import CloudFormationModel

    for provider in providers:
        if provider.TYPE not in _MODELS:
            name = provider.TYPE.replace("::", "") + "Model"
            _MODELS[provider.TYPE] = type(name, (_ProvidedModel, CloudFormationModel), {"PROVIDER": provider})


def _gone_with_its_owner(delete: Callable[..., None]) -> Callable[..., None]:
    """A resource whose owner is gone already (a permission or an invoke config of a deleted
    function, a stage of a deleted API, a subscription filter of a deleted log group) is gone with
    it. CloudFormation deletes dependents first; moto's delete loop tries resources in any order (a
    set's, so it changes with PYTHONHASHSEED) and, when one keeps failing, answers DeleteStack with
    that service's error, which `sam delete` cannot parse: a flaky `make delete`."""

    def delete_resource(self: Any, parsed_resource: Any, resource_json: dict[str, Any]) -> None:
        try:
            delete(self, parsed_resource, resource_json)
        except Exception as exc:
            if not _is_not_found(exc):
                raise

    return delete_resource


def _is_not_found(exc: Exception) -> bool:
    """Whether moto refused because the thing (or its owner) does not exist. The status alone does
    not say so: CloudWatch Logs answers a missing log group with 400 ResourceNotFoundException (a
    subscription filter whose log group was deleted first), so the error's type is read too."""
    if isinstance(exc, KeyError):
        return True
    names = (str(getattr(exc, "code", "")), str(getattr(exc, "error_type", "")), type(exc).__name__)
    return any(word in name for name in names for word in ("NotFound", "NoSuch", "404"))
