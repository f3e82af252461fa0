"""The local stack as one object: start everything in order, stop it in reverse."""

import json
import logging
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from local_stack.apigateway import (
    STAGE,
    ApiAccess,
    ApiGateway,
    KeyDirectory,
    MayInvalidate,
    Route,
    StageCache,
    admin_key,
    binary_media_types,
    invalidation_check,
    routes_from_swagger,
    stage_cache,
)
from local_stack.apigateway.state import ApiKeysState
from local_stack.awslambda.destinations import async_configs
from local_stack.awslambda.endpoint import LambdaEndpoint
from local_stack.awslambda.log_format import LogFormat
from local_stack.awslambda.runtime import LambdaRuntime, RuntimeSettings
from local_stack.cloudformation import (
    ACCOUNT_ID,
    PROJECT_ROOT,
    TEMPLATE_PATH,
    Resolver,
    Resources,
    check_template_rules,
    create_resources,
    expand_sam,
    load_template,
    name_resources,
    parameter_values,
    stack_uuid,
)
from local_stack.cloudformation.resources import API_STAGE, BUCKET, REST_API, TABLE
from local_stack.cloudwatch import AlarmEvaluator, alarm_specs
from local_stack.cloudwatch.logs import LogGroup, stack_access_log
from local_stack.durability import DurableState, ServiceState, StateSummary
from local_stack.dynamodb import CapacitySettings, DynamoDbState
from local_stack.dynamodb import throttling as dynamodb_throttling
from local_stack.embedded import EmbeddedAws, aws_client
from local_stack.embedded.client import FAKE_CREDENTIALS
from local_stack.events import Scheduler, deliver_rule_targets, schedules_of
from local_stack.faults import Faults
from local_stack.iam import AccessControl, function_principals
from local_stack.iam.principals import FUNCTION_SECRET_KEY
from local_stack.kms import KeyRing
from local_stack.patches import install_moto_fixes
from local_stack.ports import listening_socket
from local_stack.s3 import S3State
from local_stack.s3 import buckets as s3
from local_stack.sqs import SqsState

log = logging.getLogger(__name__)

# Where a running stack says how to reach it (READY's content): `shortener` reads it to find the
# local API, the embedded AWS and the admin key. Removed on a clean stop.
DISCOVERY_FILE = "stack.json"


@dataclass(frozen=True)
class StackOptions:
    """Everything `python -m local_stack` can be told."""

    template_path: Path = TEMPLATE_PATH
    stack_name: str = "shortener-local"
    region: str = "us-east-1"
    api_port: int = 3000
    aws_port: int = 3001
    lambda_port: int = 0
    data_dir: Path = PROJECT_ROOT / ".local-stack"
    persist: bool = True
    time_scale: float = 1.0
    params: dict[str, str] = field(default_factory=dict)
    faults: Faults = field(default_factory=Faults)
    max_concurrency: int = 16
    async_retries: int = 2
    # Authorise each function's AWS calls against its role in the template (--no-iam: off).
    iam: bool = True
    log_format: LogFormat = "human"
    moto_api: bool = False  # answer moto's admin paths (/moto-api/...)
    # DynamoDB's on-demand capacity enforced (dynamodb/capacity.py); scale=F divides it.
    dynamodb_capacity: CapacitySettings = field(default_factory=CapacitySettings)


class _BackgroundPart(Protocol):
    """Something with timers of its own: the scheduler, the alarm evaluator."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass
class StartReport:
    """What start() did, for the banner."""

    restored: StateSummary | None = None
    warnings: list[str] = field(default_factory=list)


class LocalStack:
    """The embedded AWS, the functions, the API, the schedules and the alarms, on loopback."""

    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.resources: Resources | None = None
        self.report = StartReport()
        self.access = AccessControl()
        self._moto: EmbeddedAws | None = None
        self._lambda_endpoint: LambdaEndpoint | None = None
        self._runtime: LambdaRuntime | None = None
        self._api: ApiGateway | None = None
        self._access_log: LogGroup | None = None
        self._state: DurableState | None = None
        self._s3_state: S3State | None = None
        self._background: list[_BackgroundPart] = []
        self._servers: list[threading.Thread] = []
        self._undo_s3_notifications: Callable[[], None] | None = None
        self._undo_event_rules: Callable[[], None] | None = None
        self._keys: KeyDirectory | None = None
        self.api_key: str | None = None

    @property
    def api_url(self) -> str:
        assert self._api is not None
        return self._api.url

    @property
    def aws_endpoint(self) -> str:
        assert self._moto is not None
        return self._moto.url

    @property
    def lambda_endpoint(self) -> str:
        assert self._lambda_endpoint is not None
        return self._lambda_endpoint.url

    def start(self) -> None:
        """Start every part; on failure, stop what was started and re-raise."""
        try:
            self._start()
        except BaseException:
            self.stop(save=False)
            raise

    def _start(self) -> None:
        options = self.options
        install_moto_fixes()
        self._moto = EmbeddedAws(options.aws_port, front=self.access.middleware, admin_api=options.moto_api)
        capacity = dynamodb_throttling.attach(self._moto, options.dynamodb_capacity)
        self._moto.start()
        template = load_template(options.template_path)
        expanded = expand_sam(template, options.stack_name, options.region, options.params)
        parameters = parameter_values(expanded.get("Parameters", {}), options.params)
        # What CloudFormation refuses before creating anything, the local stack refuses at start.
        check_template_rules(expanded, parameters, options.region, options.params)
        resolver = Resolver(
            parameters=parameters,
            region=options.region,
            stack_name=options.stack_name,
            conditions=expanded.get("Conditions", {}),
            mappings=expanded.get("Mappings", {}),
            stack_uuid=stack_uuid(options.data_dir, persist=options.persist),
        )
        resources = name_resources(
            expanded, resolver, self.aws_endpoint, options.region, options.template_path.resolve().parent
        )
        self.resources = resources
        dynamodb_throttling.add_tables(
            capacity,
            {resources.physical_id(lid): props for lid, props in resources.of_type(TABLE).items()},
            lambda name: f"arn:aws:dynamodb:{options.region}:{ACCOUNT_ID}:table/{name}",
        )
        for logical_id, reason in resources.skipped_functions.items():
            self.report.warnings.append(f"{logical_id} is not running: {reason}")
            log.warning("%s is not running: %s", logical_id, reason)
        if options.iam:
            principals = function_principals(resources)
            self.access.load(principals.by_access_key)
            # Presigned URLs the functions sign are checked against their keys' secret, as S3 does.
            self._moto.signing_secrets.update(dict.fromkeys(principals.by_access_key, FUNCTION_SECRET_KEY))
            for warning in principals.warnings:
                self.report.warnings.append(f"IAM: {warning}")
                log.warning("IAM: %s", warning)
        # A browser may send only the presigned job-file requests the functions sign (local_only):
        # with their own keys, or (IAM off) with the credentials every function then shares.
        self._moto.presigned_exemption.signers.update(
            {key: FUNCTION_SECRET_KEY for key in self.access.principal_keys()}
            if options.iam
            else {FAKE_CREDENTIALS["aws_access_key_id"]: FAKE_CREDENTIALS["aws_secret_access_key"]}
        )
        self._moto.presigned_exemption.buckets.update(
            resources.physical_id(logical_id) for logical_id in resources.of_type(BUCKET)
        )

        # Both ports are bound first: the functions are told both URLs (the Invoke API, and the API's
        # for the stage cache's invalidations), and each server is then built with what it serves.
        lambda_socket = listening_socket(options.lambda_port)
        api_socket = listening_socket(options.api_port)
        try:
            runtime = self._serve_functions_and_api(resources, lambda_socket, api_socket)
        except BaseException:
            # A server closes its socket when stopped; a socket whose server was not built yet is
            # closed here.
            if self._lambda_endpoint is None:
                lambda_socket.close()
            if self._api is None:
                api_socket.close()
            raise

        scheduler = Scheduler(schedules_of(resources, runtime, options.time_scale), runtime, options.region)
        evaluator = AlarmEvaluator(
            alarm_specs(resources),
            self.aws_endpoint,
            options.region,
            options.time_scale,
            keys=KeyRing.from_resources(resources) if options.iam else None,
        )
        parts: list[_BackgroundPart] = [scheduler, evaluator]
        if self._access_log is not None:
            parts.append(self._access_log)
        for part in parts:
            part.start()
            self._background.append(part)
        admin_key.write_private(options.data_dir / DISCOVERY_FILE, json.dumps(self.ready_info()))

    def _serve_functions_and_api(
        self, resources: Resources, lambda_socket: socket.socket, api_socket: socket.socket
    ) -> LambdaRuntime:
        """The Lambda runtime, its Invoke endpoint, the resources (and what was saved of them), then
        the REST API with its access control."""
        options = self.options
        routes, binary_types, api_id = self._api_definition(resources)
        self._runtime = LambdaRuntime(
            resources.functions,
            RuntimeSettings(
                aws_endpoint=self.aws_endpoint,
                lambda_endpoint=_url_of(lambda_socket).rstrip("/"),
                region=options.region,
                max_concurrency=options.max_concurrency,
                time_scale=options.time_scale,
                async_retries=options.async_retries,
                log_format=options.log_format,
                duplicate_async=options.faults.duplicate_async,
                async_configs=async_configs(resources),
                faults={
                    spec.logical_id: options.faults.for_function(spec.logical_id, spec.name)
                    for spec in resources.functions.values()
                },
                execute_api_endpoint=_url_of(api_socket),
            ),
        )
        self._lambda_endpoint = LambdaEndpoint(
            options.region, access=self.access, runtime=self._runtime, listening=lambda_socket
        )
        self._serve(self._lambda_endpoint.serve_forever, "lambda-endpoint")
        self._undo_s3_notifications = s3.deliver_notifications(self._invoke_for_s3)
        # Put events reach their rules' function and topic targets (moto delivers only some kinds).
        self._undo_event_rules = deliver_rule_targets(
            lambda function_arn, event: self._invoke_tracked(function_arn, event, None)
        )

        create_resources(resources, self._lambda_endpoint.sns_url)
        if options.persist:
            self._restore_state(resources)

        access = self._api_access(resources)
        # Only a signer whose role allows execute-api:InvalidateCache refreshes an entry.
        cache = self._stage_cache(
            resources,
            api_arn=f"arn:aws:execute-api:{options.region}:{ACCOUNT_ID}:{api_id}" if options.iam else None,
            may_invalidate=invalidation_check(self.access, options.region) if options.iam else None,
        )
        # The stage's access log, delivered to its subscribed functions (local_stack/cloudwatch/logs.py).
        self._access_log = stack_access_log(
            resources, self._runtime, options.faults.duplicate_logs, options.time_scale
        )
        self._api = ApiGateway(
            routes,
            binary_types,
            self._runtime,
            api_id,
            0,
            access=access,
            cache=cache,
            access_log=self._access_log,
            listening=api_socket,
        )
        functions = {route.function for route in routes} | (access.authorizer_functions if access else set())
        self._runtime.warm_up(sorted(name for name in functions if self._runtime.function(name)))
        self._serve(self._api.serve_forever, "api-gateway")
        return self._runtime

    def _api_access(self, resources: Resources) -> ApiAccess | None:
        """The REST API's access control, API keys restored and the admin key made (or kept)."""
        apis = resources.of_type(REST_API)
        if not apis:
            return None
        assert self._moto is not None and self._runtime is not None
        options = self.options
        api_logical_id = next(iter(apis))
        self._keys = KeyDirectory(
            aws_client("apigateway", self.aws_endpoint, options.region), resources.physical_id(api_logical_id)
        )
        access = ApiAccess.of_stack(resources, self._runtime, api_logical_id, self._keys)
        # API Gateway's FlushStageAuthorizersCache, which moto does not implement.
        self._moto.control_routes.append(
            ("DELETE", re.compile(r"/restapis/[^/]+/stages/[^/]+/cache/authorizers"), _flushed(access))
        )
        manager = admin_key.key_manager(
            resources.outputs(), options.stack_name, self.aws_endpoint, options.region
        )
        if manager is not None:
            self.api_key = admin_key.ensure_admin_key(manager, options.data_dir, options.persist)
        return access

    def _restore_state(self, resources: Resources) -> None:
        """Bring back the data dir's state, then journal every change before it is answered."""
        assert self._moto is not None
        services = durable_services(resources, self.options.data_dir)
        state = DurableState(
            self.options.data_dir,
            services,
            resources.names,
            exclusive=self._moto.exclusive,
        )
        self.report.restored = state.restore()
        self._moto.request_end_hooks.append(state.end_request)
        state.start()
        self._state = state
        self._s3_state = next((service for service in services if isinstance(service, S3State)), None)
        if self._s3_state is not None:
            # Events S3 sent whose invocation had not finished when the stack stopped: Lambda's
            # queue would still hold them (see s3/state.py).
            redelivered = self._s3_state.redeliver(self._invoke_tracked)
            if redelivered:
                log.info(
                    "S3: %d event notifications not yet handled before the restart delivered again",
                    redelivered,
                )

    def _invoke_for_s3(self, function_arn: str, event: dict[str, Any]) -> bool:
        """S3 invokes a notified function asynchronously; the durable state keeps the event with its
        object until the invocation is over."""
        on_done = self._s3_state.event_sent(event, function_arn) if self._s3_state is not None else None
        return self._invoke_tracked(function_arn, event, on_done)

    def _invoke_tracked(
        self, function_arn: str, event: dict[str, Any], on_done: Callable[[], None] | None
    ) -> bool:
        spec = self._runtime.function(function_arn) if self._runtime is not None else None
        if spec is None or self._runtime is None:
            return False
        self._runtime.invoke_async(spec.name, event, on_done)
        return True

    def stop(self, save: bool = True) -> StateSummary | None:
        """Stop in reverse order: no new work, workers killed, AWS closed, then the last snapshot.
        ``save=False`` leaves the data dir as a killed process would (its journal intact)."""
        if self._undo_s3_notifications is not None:
            self._undo_s3_notifications()
            self._undo_s3_notifications = None
        if self._undo_event_rules is not None:
            self._undo_event_rules()
            self._undo_event_rules = None
        if self._api is not None:
            # shutdown() waits for serve_forever, which never ran if starting failed before it.
            if any(thread.name == "api-gateway" for thread in self._servers):
                self._api.shutdown()
            self._api.server_close()
            self._api = None
        for part in self._background:
            part.stop()
        self._background.clear()
        if self._runtime is not None:
            self._runtime.stop()
        if self.access.enforcing:
            used = self.access.used_permissions()
            log.debug("IAM: permissions used: %s", "; ".join(" ".join(entry) for entry in used))
        (self.options.data_dir / DISCOVERY_FILE).unlink(missing_ok=True)
        if self._lambda_endpoint is not None:
            self._lambda_endpoint.shutdown()
            self._lambda_endpoint.server_close()
            self._lambda_endpoint = None
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        summary = None
        if self._state is not None:
            # moto's backends outlive its HTTP server: the snapshot reads them in-process.
            if save:
                summary = self._state.close()
            else:
                self._state.abandon()
            self._state = None
            self._s3_state = None
        return summary

    def ready_info(self) -> dict[str, Any]:
        """What a program needs to drive the stack (printed as the READY line)."""
        assert self.resources is not None
        return {
            "api_url": self.api_url,
            "aws_endpoint": self.aws_endpoint,
            "lambda_endpoint": self.lambda_endpoint,
            "region": self.options.region,
            "stack_name": self.options.stack_name,
            "data_dir": str(self.options.data_dir),
            "iam": self.access.enforcing,
            "resources": self.resources.names,
            "stage": STAGE,
            "outputs": self.resources.outputs(),
            # The local admin key (None when the template declares no keys).
            "api_key": self.api_key,
        }

    def _serve(self, serve_forever: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=serve_forever, name=name, daemon=True)
        thread.start()
        self._servers.append(thread)

    @staticmethod
    def _stage_cache(
        resources: Resources, api_arn: str | None = None, may_invalidate: MayInvalidate | None = None
    ) -> StageCache | None:
        """The cache the template's stage turns on (Stage=prod), if any."""
        apis = resources.of_type(REST_API)
        for stage in resources.of_type(API_STAGE).values():
            api = next(iter(apis.values()), {})
            cache = stage_cache(stage, api.get("Body", {}), api_arn=api_arn, may_invalidate=may_invalidate)
            if cache is not None:
                log.info(
                    "API stage cache on: %s",
                    ", ".join(f"{m.http_method} {m.resource}" for m in cache.methods),
                )
                return cache
        return None

    @staticmethod
    def _api_definition(resources: Resources) -> tuple[list[Route], list[str], str]:
        apis = resources.of_type(REST_API)
        routes: list[Route] = []
        binary_types: list[str] = []
        for properties in apis.values():
            routes += routes_from_swagger(properties.get("Body", {}))
            binary_types += binary_media_types(properties)
        running = {spec.name for spec in resources.functions.values()}
        api_id = resources.physical_id(next(iter(apis))) if apis else "local"
        return [route for route in routes if route.function in running], binary_types, api_id


def _url_of(listening: socket.socket) -> str:
    host, port = listening.getsockname()[:2]
    return f"http://{host}:{port}/"


def _flushed(access: ApiAccess) -> Callable[[re.Match[str]], tuple[int, bytes]]:
    def flush(_: re.Match[str]) -> tuple[int, bytes]:
        access.flush_authorizer_cache()
        return 202, b""

    return flush


def durable_services(resources: Resources, data_dir: Path) -> list[ServiceState]:
    """What the durable state keeps: the tables' items, the queues' messages, the API keys, the
    buckets' objects (their bodies in files of their own in ``data_dir``)."""
    buckets = {logical_id: resources.physical_id(logical_id) for logical_id in resources.of_type(BUCKET)}
    return [
        DynamoDbState(
            ACCOUNT_ID,
            resources.region,
            forget_on_restart(resources),
            forget_on_restart(resources, "ExpireOnRestart"),
        ),
        SqsState(ACCOUNT_ID, resources.region),
        ApiKeysState(ACCOUNT_ID, resources.region),
        S3State(ACCOUNT_ID, data_dir, buckets),
    ]


def forget_on_restart(resources: Resources, rule: str = "ForgetOnRestart") -> dict[str, list[str]]:
    """Table name -> the attributes that its restored items lose, from the table's
    ``Metadata: {LocalStack: {ForgetOnRestart: [...]}}``: what describes a process of the previous
    run (a loop's heartbeat), since a restart ended every process. With ``rule``
    ``ExpireOnRestart``: the lease attributes that restored items keep, run out (set to 0)."""
    forgotten = {}
    for logical_id in resources.of_type(TABLE):
        metadata = resources.template["Resources"][logical_id].get("Metadata", {})
        attributes = metadata.get("LocalStack", {}).get(rule, [])
        if attributes:
            forgotten[resources.physical_id(logical_id)] = [str(name) for name in attributes]
    return forgotten
