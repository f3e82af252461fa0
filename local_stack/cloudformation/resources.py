"""The template's resources, named and created on the embedded AWS.

Names follow CloudFormation's habit of `<stack>-<LogicalId>` when the template gives none, so they
are stable across restarts (the data dir's snapshot finds its tables again)."""

import base64
import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from local_stack.cloudformation.intrinsics import ACCOUNT_ID, IntrinsicError, Resolver, parameter_values
from local_stack.cloudformation.template import (
    LOCAL_CODE_BUCKET,
    PROJECT_ROOT,
    expand_sam,
    load_template,
    table_arguments,
)
from local_stack.embedded.client import aws_client
from local_stack.resource_provider import ResourceProvider
from local_stack.s3 import buckets as s3

log = logging.getLogger(__name__)

TABLE = "AWS::DynamoDB::Table"
QUEUE = "AWS::SQS::Queue"
TOPIC = "AWS::SNS::Topic"
SUBSCRIPTION = "AWS::SNS::Subscription"
ALARM = "AWS::CloudWatch::Alarm"
RULE = "AWS::Events::Rule"
FUNCTION = "AWS::Lambda::Function"
EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"
LAYER = "AWS::Lambda::LayerVersion"
REST_API = "AWS::ApiGateway::RestApi"
ROLE = "AWS::IAM::Role"
IAM_POLICY = "AWS::IAM::Policy"
MANAGED_POLICY = "AWS::IAM::ManagedPolicy"
KMS_KEY = "AWS::KMS::Key"
KMS_ALIAS = "AWS::KMS::Alias"
API_STAGE = "AWS::ApiGateway::Stage"
USAGE_PLAN = "AWS::ApiGateway::UsagePlan"
API_KEY = "AWS::ApiGateway::ApiKey"
USAGE_PLAN_KEY = "AWS::ApiGateway::UsagePlanKey"
WEB_ACL = "AWS::WAFv2::WebACL"
WEB_ACL_ASSOCIATION = "AWS::WAFv2::WebACLAssociation"
BUCKET = "AWS::S3::Bucket"
LOG_GROUP = "AWS::Logs::LogGroup"
DISTRIBUTION = "AWS::CloudFront::Distribution"
HTTP_API = "AWS::ApiGatewayV2::Api"
HTTP_INTEGRATION = "AWS::ApiGatewayV2::Integration"
HTTP_ROUTE = "AWS::ApiGatewayV2::Route"
HTTP_STAGE = "AWS::ApiGatewayV2::Stage"
GLUE_DATABASE = "AWS::Glue::Database"
GLUE_TABLE = "AWS::Glue::Table"
DELIVERY_STREAM = "AWS::KinesisFirehose::DeliveryStream"
ATHENA_WORKGROUP = "AWS::Athena::WorkGroup"
USER_POOL = "AWS::Cognito::UserPool"
USER_POOL_CLIENT = "AWS::Cognito::UserPoolClient"
USER_POOL_DOMAIN = "AWS::Cognito::UserPoolDomain"
USER_POOL_GROUP = "AWS::Cognito::UserPoolGroup"
USER_POOL_IDENTITY_PROVIDER = "AWS::Cognito::UserPoolIdentityProvider"
# The local API serves one stage under this name, whatever StageName says (api_gateway.STAGE).
LOCAL_STAGE = "local"

# The types the local stack creates or runs; the rest (roles, permissions, deployments) mean
# nothing on one machine.
EMULATED_TYPES = (
    TABLE,
    QUEUE,
    TOPIC,
    SUBSCRIPTION,
    ALARM,
    RULE,
    FUNCTION,
    # Run by awslambda/sqs_sources.py (SQS queues only); nothing is created for it in moto.
    EVENT_SOURCE_MAPPING,
    REST_API,
    USAGE_PLAN,
    API_KEY,
    WEB_ACL,
    BUCKET,
    GLUE_DATABASE,
    GLUE_TABLE,
    DELIVERY_STREAM,
    ATHENA_WORKGROUP,
    USER_POOL,
    USER_POOL_CLIENT,
)
# Properties named after what they create, per type: CloudFormation's explicit physical names.
_NAME_PROPERTIES = {
    TABLE: "TableName",
    QUEUE: "QueueName",
    TOPIC: "TopicName",
    ALARM: "AlarmName",
    RULE: "Name",
    FUNCTION: "FunctionName",
    REST_API: "Name",
    ROLE: "RoleName",
    MANAGED_POLICY: "ManagedPolicyName",
    KMS_ALIAS: "AliasName",
    USAGE_PLAN: "UsagePlanName",
    API_KEY: "Name",
    WEB_ACL: "Name",
    BUCKET: "BucketName",
    ATHENA_WORKGROUP: "Name",
    GLUE_DATABASE: "DatabaseInput.Name",
    GLUE_TABLE: "TableInput.Name",
    USER_POOL: "UserPoolName",
    USER_POOL_CLIENT: "ClientName",
    USER_POOL_DOMAIN: "Domain",
    USER_POOL_GROUP: "GroupName",
    USER_POOL_IDENTITY_PROVIDER: "ProviderName",
}
_DEFAULT_TIMEOUT_SECONDS = 3
_DEFAULT_MEMORY_MB = 128


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function as the local runtime needs it."""

    logical_id: str
    name: str
    arn: str
    code_dir: Path
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: dict[str, str]
    layer_dirs: tuple[Path, ...] = ()

    @property
    def handler_file(self) -> Path:
        module = self.handler.rsplit(".", 1)[0]
        return self.code_dir / (module.replace(".", "/") + ".py")


@dataclass
class Resources:
    """What the local stack made of the (SAM-expanded) template."""

    template: dict[str, Any]
    resolver: Resolver
    aws_endpoint: str
    region: str
    # Where CodeUri and ContentUri folders are: beside the template, as for SAM.
    base_dir: Path = PROJECT_ROOT
    _resolved: dict[str, dict[str, Any]] = field(default_factory=dict, init=False, repr=False)

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        """Logical id -> resolved properties, for the resources of one type."""
        return {
            logical_id: self.properties(logical_id)
            for logical_id, resource in self.template["Resources"].items()
            if resource["Type"] == resource_type and self._included(resource)
        }

    def properties(self, logical_id: str) -> dict[str, Any]:
        """A resource's properties with every intrinsic function resolved."""
        if logical_id not in self._resolved:
            raw = self.template["Resources"][logical_id].get("Properties", {})
            self._resolved[logical_id] = self.resolver.resolve(raw)
        return self._resolved[logical_id]

    def physical_id(self, logical_id: str) -> str:
        """What Ref gives for a resource: a table or function name, a queue URL, a topic ARN."""
        return str(self.resolver.refs[logical_id])

    @property
    def names(self) -> dict[str, str]:
        """Logical id -> physical id of everything the local stack created or runs."""
        return {
            logical_id: self.physical_id(logical_id)
            for logical_id, resource in self.template["Resources"].items()
            if resource["Type"] in EMULATED_TYPES
            and self._included(resource)
            and logical_id not in self.skipped_functions
        }

    @property
    def functions(self) -> dict[str, FunctionSpec]:
        """The functions that can run, by logical id."""
        return self._function_specs[0]

    @property
    def skipped_functions(self) -> dict[str, str]:
        """The functions that cannot run yet (their handler file is missing), with the reason; the
        stack starts without them, so it keeps working while a function is being written."""
        return self._function_specs[1]

    @cached_property
    def _function_specs(self) -> tuple[dict[str, FunctionSpec], dict[str, str]]:
        specs, skipped = {}, {}
        for logical_id, properties in self.of_type(FUNCTION).items():
            spec = self._function_spec(logical_id, properties)
            if spec.handler_file.is_file():
                specs[logical_id] = spec
            else:
                skipped[logical_id] = f"no handler file {spec.handler_file}"
        return specs, skipped

    def outputs(self) -> dict[str, str]:
        """The template's Outputs, resolved to local values (those that cannot be are left out)."""
        resolved = {}
        for name, output in (self.template.get("Outputs") or {}).items():
            condition = output.get("Condition")
            if condition is not None and not self.resolver.condition(condition):
                continue
            try:
                resolved[name] = _env_text(self.resolver.resolve(output.get("Value")))
            except IntrinsicError as exc:
                log.debug("Output %s has no local value: %s", name, exc)
        return resolved

    def function_by_name(self, name_or_arn: str) -> FunctionSpec | None:
        """The function a Lambda API call names: by name, full ARN or partial ARN."""
        name = name_or_arn.split(":function:", 1)[-1].split(":", 1)[0]
        return next((spec for spec in self.functions.values() if spec.name == name), None)

    def _included(self, resource: dict[str, Any]) -> bool:
        condition = resource.get("Condition")
        return condition is None or self.resolver.condition(condition)

    def _function_spec(self, logical_id: str, properties: dict[str, Any]) -> FunctionSpec:
        code = properties.get("Code", {})
        if code.get("S3Bucket") != LOCAL_CODE_BUCKET:
            raise IntrinsicError(f"{logical_id}: only local CodeUri folders can run locally")
        layers = self._layer_dirs()
        variables = properties.get("Environment", {}).get("Variables", {})
        return FunctionSpec(
            logical_id=logical_id,
            name=self.physical_id(logical_id),
            arn=self.resolver.get_att(logical_id, "Arn"),
            code_dir=(self.base_dir / code["S3Key"]).resolve(),
            handler=properties["Handler"],
            timeout_seconds=int(properties.get("Timeout", _DEFAULT_TIMEOUT_SECONDS)),
            memory_mb=int(properties.get("MemorySize", _DEFAULT_MEMORY_MB)),
            environment={key: _env_text(value) for key, value in variables.items()},
            layer_dirs=tuple(layers[arn] for arn in properties.get("Layers", []) if arn in layers),
        )

    def _layer_dirs(self) -> dict[str, Path]:
        return {
            self.physical_id(logical_id): (self.base_dir / properties["Content"]["S3Key"]).resolve()
            for logical_id, properties in self.of_type(LAYER).items()
            if properties.get("Content", {}).get("S3Bucket") == LOCAL_CODE_BUCKET
        }


def name_resources(
    template: dict[str, Any],
    resolver: Resolver,
    aws_endpoint: str,
    region: str,
    base_dir: Path = PROJECT_ROOT,
) -> Resources:
    """Give every resource its local physical id and attributes, before anything is created, so
    that references between resources (a redrive policy's ARN, a function's queue URL) resolve."""
    stack = resolver.stack_name
    arn = f"{region}:{ACCOUNT_ID}"
    for logical_id, resource in template["Resources"].items():
        kind = resource["Type"]
        name = _explicit_name(resolver, kind, resource) or f"{stack}-{logical_id}"
        if kind == QUEUE and resource.get("Properties", {}).get("FifoQueue") and not name.endswith(".fifo"):
            name += ".fifo"
        refs, attributes = _identity(kind, name, arn, aws_endpoint)
        resolver.refs[logical_id] = refs
        resolver.attributes[logical_id] = attributes
    return Resources(template, resolver, aws_endpoint, region, base_dir)


def template_resources(
    stack_name: str,
    region: str,
    aws_endpoint: str,
    params: dict[str, str] | None = None,
    stack_uuid: str | None = None,
) -> Resources:
    """template.yaml's resources, SAM-expanded and named, nothing created: for tests and benchmarks
    that judge the template itself (``stack_uuid``: the end of AWS::StackId, else the resolver's)."""
    expanded = expand_sam(load_template(), stack_name, region)
    resolver = Resolver(
        parameters=parameter_values(expanded.get("Parameters", {}), params or {}),
        region=region,
        stack_name=stack_name,
        conditions=expanded.get("Conditions", {}),
        mappings=expanded.get("Mappings", {}),
    )
    if stack_uuid:
        resolver.stack_uuid = stack_uuid
    return name_resources(expanded, resolver, aws_endpoint, region)


def _identity(kind: str, name: str, arn: str, endpoint: str) -> tuple[str, dict[str, Any]]:
    """(Ref value, GetAtt attributes) of a resource called ``name``, as CloudFormation gives them."""
    known = _IDENTITIES.get(kind)
    if known is not None:
        return known(name, arn, endpoint)
    service = kind.split("::")[1].lower() if kind.count("::") >= 2 else "local"
    return name, {"Arn": f"arn:aws:{service}:{arn}:{name}"}


def _table_identity(name: str, arn: str, _: str) -> tuple[str, dict[str, Any]]:
    table_arn = f"arn:aws:dynamodb:{arn}:table/{name}"
    return name, {"Arn": table_arn, "StreamArn": f"{table_arn}/stream/local"}


def _queue_identity(name: str, arn: str, endpoint: str) -> tuple[str, dict[str, Any]]:
    url = f"{endpoint}/{ACCOUNT_ID}/{name}"
    return url, {"Arn": f"arn:aws:sqs:{arn}:{name}", "QueueName": name, "QueueUrl": url}


def _topic_identity(name: str, arn: str, _: str) -> tuple[str, dict[str, Any]]:
    topic_arn = f"arn:aws:sns:{arn}:{name}"
    return topic_arn, {"TopicArn": topic_arn, "TopicName": name}


def _kms_key_identity(name: str, arn: str, _: str) -> tuple[str, dict[str, Any]]:
    key_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{arn}:{name}"))
    return key_id, {"Arn": f"arn:aws:kms:{arn}:key/{key_id}", "KeyId": key_id}


def _event_source_mapping_identity(name: str, arn: str, _: str) -> tuple[str, dict[str, Any]]:
    # A mapping's Ref is its UUID, made by Lambda; here the same one on every start.
    mapping_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{arn}:event-source-mapping:{name}"))
    return mapping_id, {
        "Id": mapping_id,
        "EventSourceMappingArn": f"arn:aws:lambda:{arn}:event-source-mapping:{mapping_id}",
    }


def _web_acl_identity(name: str, arn: str, _: str) -> tuple[str, dict[str, Any]]:
    acl_arn = f"arn:aws:wafv2:{arn}:regional/webacl/{name}/local"
    return f"{name}|local|REGIONAL", {"Arn": acl_arn, "Id": "local"}


def _bucket_identity(name: str, _: str, endpoint: str) -> tuple[str, dict[str, Any]]:
    # CloudFormation's default bucket names may have capitals, which S3 refuses.
    name = name.lower()
    host = endpoint.split("://", 1)[-1]
    return name, {
        "Arn": f"arn:aws:s3:::{name}",
        "DomainName": f"{host}/{name}",
        "RegionalDomainName": f"{host}/{name}",
    }


_Identity = Callable[[str, str, str], tuple[str, dict[str, Any]]]
_IDENTITIES: dict[str, _Identity] = {
    DELIVERY_STREAM: lambda name, arn, _: (name, {"Arn": f"arn:aws:firehose:{arn}:deliverystream/{name}"}),
    ATHENA_WORKGROUP: lambda name, arn, _: (name, {}),
    TABLE: _table_identity,
    QUEUE: _queue_identity,
    TOPIC: _topic_identity,
    ALARM: lambda name, arn, _: (name, {"Arn": f"arn:aws:cloudwatch:{arn}:alarm:{name}"}),
    RULE: lambda name, arn, _: (name, {"Arn": f"arn:aws:events:{arn}:rule/{name}"}),
    FUNCTION: lambda name, arn, _: (name, {"Arn": f"arn:aws:lambda:{arn}:function:{name}"}),
    LAYER: lambda name, arn, _: (f"arn:aws:lambda:{arn}:layer:{name}:1", {}),
    EVENT_SOURCE_MAPPING: _event_source_mapping_identity,
    REST_API: lambda name, arn, _: ("local", {"RootResourceId": "root"}),
    # IAM is global: no region in its ARNs.
    ROLE: lambda name, arn, _: (
        name,
        {"Arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}", "RoleId": f"AROA{_key_id(name)}"},
    ),
    MANAGED_POLICY: lambda name, arn, _: (f"arn:aws:iam::{ACCOUNT_ID}:policy/{name}", {}),
    KMS_KEY: _kms_key_identity,
    API_STAGE: lambda name, arn, _: (LOCAL_STAGE, {}),
    WEB_ACL: _web_acl_identity,
    BUCKET: _bucket_identity,
    LOG_GROUP: lambda name, arn, _: (name, {"Arn": f"arn:aws:logs:{arn}:log-group:{name}:*"}),
    USER_POOL: lambda name, arn, _: _user_pool_identity(name, arn),
    USER_POOL_CLIENT: lambda name, arn, _: (client_id(name), {"ClientId": client_id(name), "Name": name}),
}


def _user_pool_identity(name: str, arn: str) -> tuple[str, dict[str, Any]]:
    """A pool id as Cognito makes them (``<region>_<9 characters>``), the same for the same name on
    every start, so the users the data dir keeps find their pool again."""
    region = arn.split(":", 1)[0]
    pool_id = user_pool_id(name, region)
    provider = f"cognito-idp.{region}.amazonaws.com/{pool_id}"
    return pool_id, {
        "Arn": f"arn:aws:cognito-idp:{arn}:userpool/{pool_id}",
        "ProviderName": provider,
        "ProviderURL": provider,
        "UserPoolId": pool_id,
    }


def user_pool_id(name: str, region: str) -> str:
    """``<region>_<9 characters>``, as Cognito's pool ids, the same for the same name."""
    return f"{region}_{_key_id(name)[:9]}"


def client_id(name: str) -> str:
    """26 lower-case letters and digits, as Cognito's client ids, the same for the same name."""
    return base64.b32encode(hashlib.sha256(f"client:{name}".encode()).digest()).decode().lower()[:26]


def _key_id(name: str) -> str:
    """16 characters of an IAM-style unique id, the same for the same name on every start."""
    return base64.b32encode(hashlib.sha256(name.encode()).digest()).decode()[:16]


def _explicit_name(resolver: Resolver, kind: str, resource: dict[str, Any]) -> str | None:
    prop = _NAME_PROPERTIES.get(kind)
    value: Any = resource.get("Properties", {})
    # A nested name (DatabaseInput.Name) is a path of properties.
    for part in prop.split(".") if prop else [""]:
        value = value.get(part) if isinstance(value, dict) and part else None
    if value is None:
        return None
    name = str(resolver.resolve(value))
    # Glue keeps its names in lower case.
    return name.lower() if kind in (GLUE_DATABASE, GLUE_TABLE) else name


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def _attribute_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def create_resources(
    resources: Resources, sns_endpoint_for: Callable[[str], str], providers: Mapping[str, ResourceProvider]
) -> None:
    """Create the tables, queues, topics, subscriptions, alarms, rules, buckets and usage plans on
    the embedded AWS (in this process). The types with a provider (``local_stack.registry``) are
    created by it, as `sam deploy` against the embedded AWS creates them.

    ``sns_endpoint_for(function_name)`` gives the HTTP address that delivers a topic's messages
    to a function, since moto cannot run Lambda code itself. For the same reason no SQS event
    source mapping is made in moto's Lambda (moto would invoke its function through Docker on each
    SendMessage): the Lambda service's pollers run them (awslambda/sqs_sources.py)."""
    endpoint, region = resources.aws_endpoint, resources.region
    _create_tables(resources, aws_client("dynamodb", endpoint, region))
    _create_queues(resources, aws_client("sqs", endpoint, region))
    _create_topics(resources, aws_client("sns", endpoint, region), sns_endpoint_for, providers[SUBSCRIPTION])
    for resource_type in (ALARM,):
        _create_with(resources, providers[resource_type])
    _create_rules(resources, aws_client("events", endpoint, region))
    _create_buckets(resources, aws_client("s3", endpoint, region))
    # A UsagePlanKey names the plan and the key, whose ids exist only once they are created.
    for resource_type in (USAGE_PLAN, API_KEY, USAGE_PLAN_KEY):
        _create_with(resources, providers[resource_type])
    # The edge's origin (an HTTP API), then the distribution whose origin names the API's id.
    for resource_type in (HTTP_API, HTTP_INTEGRATION, HTTP_ROUTE, HTTP_STAGE):
        _create_with(resources, providers[resource_type])
    # The edge's distribution, in moto's CloudFront: a change's CreateInvalidation names it.
    _create_with(resources, providers[DISTRIBUTION])
    # The people's user pool, then what belongs to it (the page's client names a provider).
    for resource_type in (
        USER_POOL,
        USER_POOL_DOMAIN,
        USER_POOL_IDENTITY_PROVIDER,
        USER_POOL_CLIENT,
        USER_POOL_GROUP,
    ):
        _create_with(resources, providers[resource_type])
    # The click events' schema, the stream that converts to it, and the workgroup that asks it.
    for resource_type in (GLUE_DATABASE, GLUE_TABLE, DELIVERY_STREAM, ATHENA_WORKGROUP):
        _create_with(resources, providers[resource_type])


def _create_with(resources: Resources, provider: ResourceProvider) -> None:
    """Every resource of the provider's type, in template order; each one's Ref is its physical id
    from here on. Properties are resolved now, not before: they may name resources made just before."""
    for logical_id in resources.of_type(provider.TYPE):
        raw = resources.template["Resources"][logical_id].get("Properties", {})
        created = provider.create(
            resources.physical_id(logical_id), resources.resolver.resolve(raw), ACCOUNT_ID, resources.region
        )
        resources.resolver.refs[logical_id] = created.physical_id


def _create_tables(resources: Resources, dynamodb: Any) -> None:
    for logical_id, properties in resources.of_type(TABLE).items():
        name = resources.physical_id(logical_id)
        arguments = table_arguments(properties, name)
        if "StreamSpecification" in properties:
            arguments["StreamSpecification"] = {"StreamEnabled": True, **properties["StreamSpecification"]}
        dynamodb.create_table(**arguments)
        ttl = properties.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)


def _create_queues(resources: Resources, sqs: Any) -> None:
    queues = resources.of_type(QUEUE)
    # Every queue first, then redrive policies: a policy must name a queue that exists.
    for logical_id, properties in queues.items():
        attributes = {
            key: _attribute_text(value)
            for key, value in properties.items()
            if key not in ("QueueName", "Tags", "RedrivePolicy")
        }
        name = resources.resolver.attributes[logical_id]["QueueName"]
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        if url != resources.physical_id(logical_id):
            raise RuntimeError(f"moto named queue {name} {url}, not {resources.physical_id(logical_id)}")
    for logical_id, properties in queues.items():
        if "RedrivePolicy" in properties:
            sqs.set_queue_attributes(
                QueueUrl=resources.physical_id(logical_id),
                Attributes={"RedrivePolicy": _attribute_text(properties["RedrivePolicy"])},
            )


def _create_topics(
    resources: Resources, sns: Any, sns_endpoint_for: Callable[[str], str], subscriptions_of: ResourceProvider
) -> None:
    # (logical id of an AWS::SNS::Subscription or "" for a topic's inline one, topic, protocol, endpoint)
    subscriptions: list[tuple[str, str, str, str]] = []
    for logical_id, properties in resources.of_type(TOPIC).items():
        attributes = {
            key: _attribute_text(value)
            for key, value in properties.items()
            if key in ("DisplayName", "KmsMasterKeyId", "FifoTopic", "ContentBasedDeduplication")
        }
        name = resources.resolver.attributes[logical_id]["TopicName"]
        sns.create_topic(Name=name, Attributes=attributes)
        topic_arn = resources.physical_id(logical_id)
        subscriptions += [
            ("", topic_arn, s["Protocol"], s["Endpoint"]) for s in properties.get("Subscription", [])
        ]
    for logical_id, properties in resources.of_type(SUBSCRIPTION).items():
        subscriptions.append(
            (logical_id, properties["TopicArn"], properties["Protocol"], properties["Endpoint"])
        )
    for logical_id, topic_arn, protocol, endpoint in subscriptions:
        target = (protocol, endpoint)
        if protocol == "lambda":
            function = resources.function_by_name(endpoint)
            if function is None:
                log.warning("Not subscribing %s to %s: the function is not running", endpoint, topic_arn)
                continue
            # moto delivers to http endpoints only; ours turns the notification into a Lambda SNS event.
            target = ("http", sns_endpoint_for(function.name))
        created = subscriptions_of.create(
            logical_id,
            {"TopicArn": topic_arn, "Protocol": target[0], "Endpoint": target[1]},
            ACCOUNT_ID,
            resources.region,
        )
        if logical_id:
            resources.resolver.refs[logical_id] = created.physical_id


def _create_buckets(resources: Resources, client: Any) -> None:
    for logical_id, properties in resources.of_type(BUCKET).items():
        s3.create_bucket(client, resources.physical_id(logical_id), properties, resources.region)


def _create_rules(resources: Resources, events: Any) -> None:
    for logical_id, properties in resources.of_type(RULE).items():
        name = resources.physical_id(logical_id)
        rule: dict[str, Any] = {
            key: properties[key]
            for key in ("ScheduleExpression", "Description", "State")
            if key in properties
        }
        if "EventPattern" in properties:
            rule["EventPattern"] = _attribute_text(properties["EventPattern"])
        events.put_rule(Name=name, **rule)
        targets = [
            {key: target[key] for key in ("Id", "Arn", "Input", "InputPath") if key in target}
            for target in properties.get("Targets", [])
        ]
        if targets:
            events.put_targets(Rule=name, Targets=targets)
