"""The local stack as one object: start everything in order, stop it in reverse."""

import json
import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

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
from local_stack.apigateway.http_api import HttpApi, http_apis
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
from local_stack.cloudformation.resources import (
    API_STAGE,
    REST_API,
    USER_POOL,
    USER_POOL_CLIENT,
    FunctionSpec,
)
from local_stack.cloudfront.edge import EdgeConfig, LocalEdge, edge_aliases, edge_config, has_edge
from local_stack.cloudwatch.logs import LogGroup, stack_access_log, stack_function_logs
from local_stack.cognito import tokens as cognito_tokens
from local_stack.cognito.hosted_ui import HostedSignIn
from local_stack.cognito.person import Person, ensure_person
from local_stack.cognito.triggers import TriggerFailed
from local_stack.durability import DurableState, ServiceState, StateSummary
from local_stack.dynamodb import CapacitySettings
from local_stack.embedded import EmbeddedAws, aws_client
from local_stack.faults import Faults
from local_stack.iam import AccessControl, signing_secret
from local_stack.patches import install_moto_fixes
from local_stack.ports import listening_socket
from local_stack.registry import PROVIDERS_BY_TYPE, SERVICES
from local_stack.service import Service

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
    # The local edge (cloudfront/edge.py), when the template's Edge condition holds.
    edge_port: int = 3003
    # CloudFront-Viewer-Country of every request through the local edge: loopback has no country.
    edge_country: str = "US"
    # The user pool's hosted sign-in (cognito/hosted_ui.py), when the template makes a pool.
    auth_port: int = 3002
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
        self._edge: LocalEdge | None = None
        # The HTTP APIs (the edge's origin), by id: their listeners on free loopback ports.
        self._http_apis: dict[str, HttpApi] = {}
        self._access_log: LogGroup | None = None
        self._function_logs: list[LogGroup] = []
        self._state: DurableState | None = None
        self._services: list[Service] = []
        self._servers: list[threading.Thread] = []
        self._keys: KeyDirectory | None = None
        self.api_key: str | None = None
        # The hosted sign-in of the template's user pool, and the person the banner shows.
        self._sign_in: HostedSignIn | None = None
        self.sign_in_person: Person | None = None
        # The secret of the functions' keys (iam/signing_secret.py), made or read at start.
        self.function_secret = ""

    @property
    def api_url(self) -> str:
        assert self._api is not None
        return self._api.url

    @property
    def edge_url(self) -> str | None:
        """The local edge's URL (None when the template's Edge condition does not hold)."""
        return self._edge.url if self._edge is not None else None

    @property
    def domain_urls(self) -> dict[str, str]:
        """Where each of the stack's other domains answers (its own port on the local edge)."""
        edge = self._edge
        return {name: edge.alias_url(name) for name in edge.aliases} if edge is not None else {}

    @property
    def auth_url(self) -> str | None:
        """The hosted sign-in's base URL (None when the template makes no user pool)."""
        return self._sign_in.url if self._sign_in is not None else None

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
        self.function_secret = signing_secret.function_secret(options.data_dir, options.persist)
        self._services = [make() for make in SERVICES]
        for service in self._services:
            service.attach(self)
        self._moto.start()
        self.resources = resources = self._named_resources()
        for logical_id, reason in resources.skipped_functions.items():
            self.warn(f"{logical_id} is not running: {reason}")
        for service in self._services:
            service.configure(self)

        # The ports are bound first (_Listening).
        listening = _Listening.bind(resources, options)
        try:
            self._serve_functions_and_api(resources, listening)
            self._serve_http_apis(resources)
            if listening.edge is not None:
                self._start_edge(resources, listening.edge, listening.domains)
            if listening.auth is not None:
                self._serve_sign_in(resources, listening.auth, _url_of(listening.api))
        except BaseException:
            # A server closes its socket when stopped; a socket whose server was not built yet is
            # closed here.
            listening.close_unserved(
                lambda_=self._lambda_endpoint is not None,
                api=self._api is not None,
                edge=self._edge is not None,
                auth=self._sign_in is not None,
            )
            raise
        for service in self._services:
            service.start(self)
        if self._edge is not None:
            self._edge.start()
        self._ensure_sign_in_person()
        admin_key.write_private(options.data_dir / DISCOVERY_FILE, json.dumps(self.ready_info()))

    def _serve_sign_in(self, resources: Resources, listening: socket.socket, page_url: str) -> None:
        """The hosted sign-in of the template's user pool, its page client's callback the local
        page (as SignInPageUrl makes it on AWS), and the banner's person."""
        page = _page_client(resources)
        assert page is not None and self._moto is not None
        pool_id, client_id = page
        options = self.options
        backend = cognito_tokens.backend(ACCOUNT_ID, options.region)
        client = backend.describe_user_pool_client(pool_id, client_id)
        pages = [page_url, page_url.replace("127.0.0.1", "localhost")]
        for setting in ("CallbackURLs", "LogoutURLs"):
            client.extended_config[setting] = list(
                dict.fromkeys(pages + list(client.extended_config.get(setting) or []))
            )
        self._sign_in = HostedSignIn(
            lambda: cognito_tokens.backend(ACCOUNT_ID, options.region),
            pool_id,
            listening,
            jwks=cognito_tokens.public_jwks,
            exclusive=self._moto.exclusive,
            invoke_trigger=self._invoke_trigger,
        )
        self._serve(self._sign_in.serve_forever, "hosted-sign-in")

    def _invoke_trigger(self, function_arn: str, event: dict[str, Any]) -> Any:
        """A user pool trigger's function, invoked synchronously (RequestResponse) as Cognito
        invokes it; TriggerFailed when it fails or is not one of the stack's."""
        runtime = self._runtime
        spec = runtime.function(function_arn) if runtime is not None else None
        if runtime is None or spec is None:
            raise TriggerFailed(f"no function {function_arn}")
        outcome = runtime.invoke(spec.name, event)
        if outcome.error is not None:
            raise TriggerFailed(str(outcome.error.get("errorMessage") or outcome.error.get("errorType")))
        return outcome.result

    def _ensure_sign_in_person(self) -> None:
        """The person the banner shows (made through the embedded AWS, so it is journaled)."""
        if self._sign_in is None:
            return
        options = self.options
        self.sign_in_person = ensure_person(
            aws_client("cognito-idp", self.aws_endpoint, options.region),
            self._sign_in.pool_id,
            options.data_dir,
            options.persist,
        )

    def _start_edge(
        self, resources: Resources, listening: socket.socket, domain_sockets: Mapping[str, socket.socket]
    ) -> None:
        """The local edge in front of the API (the template deploys the distribution), and a
        listener for each of its other names; it starts serving with the services."""
        options = self.options
        config = edge_config(resources, self.aws_endpoint, options.region)
        assert config is not None
        self._edge = LocalEdge(
            config,
            origin_url=self._origin_url(config),
            aws_endpoint=self.aws_endpoint,
            region=options.region,
            listening=listening,
            country=options.edge_country,
        )
        for name, domain_socket in domain_sockets.items():
            self._edge.serve_alias(name, domain_socket)

    def _serve_http_apis(self, resources: Resources) -> None:
        """Each HTTP API of the template (the edge's origin) on a free loopback port."""
        assert self._runtime is not None
        for definition in http_apis(resources):
            listening = listening_socket(0)
            try:
                api = HttpApi(definition, self._runtime, listening)
            except BaseException:
                listening.close()
                raise
            self._http_apis[definition.api_id] = api
            self._serve(api.serve_forever, f"http-api-{definition.api_id}")

    def _origin_url(self, config: EdgeConfig) -> str:
        """The local listener of the API the distribution's origin names
        (``{api id}.execute-api.{region}.amazonaws.com``): an HTTP API's, or the REST API's."""
        api_id = config.origin_domain.split(".", 1)[0]
        if api_id in self._http_apis:
            return self._http_apis[api_id].url
        assert self._api is not None
        if api_id == self._api.api_id:
            return self.api_url
        raise ValueError(f"The distribution's origin {config.origin_domain} is no API of this stack")

    def _named_resources(self) -> Resources:
        """The template, SAM-expanded, its Rules checked, each resource named on the embedded AWS."""
        options = self.options
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
        return name_resources(
            expanded, resolver, self.aws_endpoint, options.region, options.template_path.resolve().parent
        )

    def _serve_functions_and_api(
        self,
        resources: Resources,
        listening: "_Listening",
    ) -> None:
        """The Lambda runtime, its Invoke endpoint, the resources (and what was saved of them), then
        the REST API with its access control."""
        options = self.options
        routes, binary_types, api_id = self._api_definition(resources)
        self._runtime = self._lambda_runtime(resources, listening)
        self._lambda_endpoint = LambdaEndpoint(
            options.region, access=self.access, runtime=self._runtime, listening=listening.lambda_
        )
        self._serve(self._lambda_endpoint.serve_forever, "lambda-endpoint")
        for service in self._services:
            service.connect(self)

        create_resources(resources, self._lambda_endpoint.sns_url, PROVIDERS_BY_TYPE)
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
        # The functions' own log groups that the template subscribes (before their workers start).
        self._function_logs = stack_function_logs(
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
            listening=listening.api,
        )
        functions = {route.function for route in routes} | (access.authorizer_functions if access else set())
        self._runtime.warm_up(sorted(name for name in functions if self._runtime.function(name)))
        # The functions that functions invoke by name (here the loops' poller and the jobs worker),
        # started in the background: the first job after the start meets them warm, as it meets
        # the API's (a provisioned concurrency of one; on AWS the first job pays their cold starts).
        self._runtime.warm_up(sorted(invoked_by_name(resources.functions.values()) - functions), wait=False)
        self._serve(self._api.serve_forever, "api-gateway")

    def _lambda_runtime(
        self,
        resources: Resources,
        listening: "_Listening",
    ) -> LambdaRuntime:
        options = self.options
        functions = resources.functions
        if listening.edge is not None:
            domain_urls = {name: _url_of(domain) for name, domain in listening.domains.items()}
            functions = _short_urls_naming(_url_of(listening.edge), domain_urls, functions)
        page = _page_client(resources)
        if listening.auth is not None and page is not None:
            functions = _sign_in_naming(_url_of(listening.auth).rstrip("/"), page[1], functions)
        return LambdaRuntime(
            functions,
            RuntimeSettings(
                aws_endpoint=self.aws_endpoint,
                lambda_endpoint=_url_of(listening.lambda_).rstrip("/"),
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
                execute_api_endpoint=_url_of(listening.api),
                function_secret=self.function_secret,
            ),
        )

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
        parts = [(service, service.durable_state(self, self.options.data_dir)) for service in self._services]
        state = DurableState(
            self.options.data_dir,
            [part for _, part in parts if part is not None],
            resources.names,
            exclusive=self._moto.exclusive,
        )
        self.report.restored = state.restore()
        self._moto.request_end_hooks.append(state.end_request)
        state.start()
        self._state = state
        for service, part in parts:
            service.restored(self, part)

    def invoke_async(
        self, function_arn: str, event: dict[str, Any], on_done: Callable[[], None] | None = None
    ) -> bool:
        """Invoke a function asynchronously, as AWS's services do; False if it is not running."""
        spec = self._runtime.function(function_arn) if self._runtime is not None else None
        if spec is None or self._runtime is None:
            return False
        self._runtime.invoke_async(spec.name, event, on_done)
        return True

    def warn(self, message: str) -> None:
        """A warning for the banner, and the log."""
        self.report.warnings.append(message)
        log.warning("%s", message)

    @property
    def account_id(self) -> str:
        return ACCOUNT_ID

    @property
    def moto(self) -> EmbeddedAws | None:
        return self._moto

    @property
    def runtime(self) -> LambdaRuntime | None:
        return self._runtime

    @property
    def access_log(self) -> LogGroup | None:
        return self._access_log

    @property
    def function_logs(self) -> list[LogGroup]:
        return self._function_logs

    def stop(self, save: bool = True) -> StateSummary | None:
        """Stop in reverse order: no new work, workers killed, AWS closed, then the last snapshot.
        ``save=False`` leaves the data dir as a killed process would (its journal intact)."""
        self._stop_front_servers()
        for http_api in self._http_apis.values():
            http_api.shutdown()
            http_api.server_close()
        self._http_apis = {}
        if self._api is not None:
            # shutdown() waits for serve_forever, which never ran if starting failed before it.
            if any(thread.name == "api-gateway" for thread in self._servers):
                self._api.shutdown()
            self._api.server_close()
            self._api = None
        # Deliveries undone, timers stopped (the schedules, the alarms, the access log).
        for service in reversed(self._services):
            service.stop()
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
        self._services = []
        return summary

    def _stop_front_servers(self) -> None:
        """The servers in front of the API: the edge, the hosted sign-in."""
        if self._edge is not None:
            self._edge.stop()
            self._edge = None
        if self._sign_in is not None:
            self._sign_in.shutdown()
            self._sign_in.server_close()
            self._sign_in = None

    def ready_info(self) -> dict[str, Any]:
        """What a program needs to drive the stack (printed as the READY line)."""
        assert self.resources is not None
        return {
            "api_url": self.api_url,
            # The local edge's URL (None without the template's Edge condition).
            "edge_url": self.edge_url,
            "domain_urls": self.domain_urls,
            # Where the local edge sends its misses (the HTTP API the distribution's origin names).
            "edge_origin_url": self._edge.origin_url if self._edge is not None else None,
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
            # The hosted sign-in of the template's user pool (None without one), and its person.
            "auth_url": self.auth_url,
            "sign_in": self._sign_in_info(),
            # Whose stack.json this is: `shortener` trusts the file only while this process runs.
            "pid": os.getpid(),
        }

    def _sign_in_info(self) -> dict[str, Any] | None:
        if self._sign_in is None or self.resources is None:
            return None
        page = _page_client(self.resources)
        person = self.sign_in_person
        return {
            "url": self._sign_in.url,
            "user_pool_id": self._sign_in.pool_id,
            "client_id": page[1] if page else None,
            "issuer": self._sign_in.issuer,
            "username": person.username if person else None,
            "password": person.password if person else None,
        }

    def _serve(self, serve_forever: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=serve_forever, name=name, daemon=True)
        thread.start()
        self._servers.append(thread)

    @staticmethod
    def _stage_cache(
        resources: Resources, api_arn: str | None = None, may_invalidate: MayInvalidate | None = None
    ) -> StageCache | None:
        """The cache the template's stage turns on (Stage=prod with Edge=off), if any."""
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


def _short_urls_naming(
    edge_url: str, domain_urls: Mapping[str, str], functions: dict[str, FunctionSpec]
) -> dict[str, FunctionSpec]:
    """The functions, their empty PUBLIC_BASE_URL filled with the local edge's URL: short URLs name
    it, as they name the distribution's domain on AWS (docs/edge.md); with the stack's other
    domains, DOMAIN_URLS says where each answers (its loopback port, not https://<name>/)."""
    named = {}
    for logical_id, spec in functions.items():
        environment = dict(spec.environment)
        if environment.get("PUBLIC_BASE_URL") == "":
            environment["PUBLIC_BASE_URL"] = edge_url
        if "DOMAINS" in environment and domain_urls:
            environment["DOMAIN_URLS"] = json.dumps(dict(domain_urls))
        named[logical_id] = (
            replace(spec, environment=environment) if environment != spec.environment else spec
        )
    return named


@dataclass(frozen=True)
class _Listening:
    """The stack's listening sockets, bound before anything is served: the functions are told the
    URLs (the Invoke API, the API's for the stage cache's invalidations, the edge's and the
    domains' for short URLs, the hosted sign-in's for the page), and each server is then built
    with what it serves."""

    lambda_: socket.socket
    api: socket.socket
    edge: socket.socket | None
    domains: dict[str, socket.socket]
    auth: socket.socket | None

    @classmethod
    def bind(cls, resources: Resources, options: StackOptions) -> "_Listening":
        edge = listening_socket(options.edge_port) if has_edge(resources) else None
        return cls(
            lambda_=listening_socket(options.lambda_port),
            api=listening_socket(options.api_port),
            edge=edge,
            domains=_domain_sockets(resources, options.edge_port) if edge is not None else {},
            auth=listening_socket(options.auth_port) if _page_client(resources) else None,
        )

    def close_unserved(self, *, lambda_: bool, api: bool, edge: bool, auth: bool) -> None:
        """Close the sockets whose server was not built (a server closes its own when stopped)."""
        unserved = [
            *([] if lambda_ else [self.lambda_]),
            *([] if api else [self.api]),
            *([] if edge else [self.edge, *self.domains.values()]),
            *([] if auth else [self.auth]),
        ]
        for listening in unserved:
            if listening is not None:
                listening.close()


def _domain_sockets(resources: Resources, edge_port: int) -> dict[str, socket.socket]:
    """The stack's other domains' listeners, each on a port of its own: the next ones after the
    edge's (any free one when the edge's is)."""
    sockets: dict[str, socket.socket] = {}
    try:
        for index, name in enumerate(edge_aliases(resources)):
            sockets[name] = listening_socket(edge_port + 1 + index if edge_port else 0)
    except BaseException:
        for listening in sockets.values():
            listening.close()
        raise
    return sockets


def _page_client(resources: Resources) -> tuple[str, str] | None:
    """(user pool id, client id) of the template's user pool and its (first) app client, or None
    when the template makes no pool (SignIn=off, or an existing pool)."""
    pools = resources.of_type(USER_POOL)
    clients = resources.of_type(USER_POOL_CLIENT)
    if not pools or not clients:
        return None
    return resources.physical_id(next(iter(pools))), resources.physical_id(next(iter(clients)))


def _sign_in_naming(
    auth_url: str, client_id: str, functions: dict[str, FunctionSpec]
) -> dict[str, FunctionSpec]:
    """The page's sign-in settings (SIGN_IN_URL, SIGN_IN_CLIENT_ID) filled with the local hosted
    sign-in and the page client, whose callback the stack makes the local page (on AWS, once
    SignInPageUrl or DomainName names the page)."""
    return {
        logical_id: replace(
            spec,
            environment={**spec.environment, "SIGN_IN_URL": auth_url, "SIGN_IN_CLIENT_ID": client_id},
        )
        if "SIGN_IN_URL" in spec.environment
        else spec
        for logical_id, spec in functions.items()
    }


def _url_of(listening: socket.socket) -> str:
    host, port = listening.getsockname()[:2]
    return f"http://{host}:{port}/"


def _flushed(access: ApiAccess) -> Callable[[re.Match[str]], tuple[int, bytes]]:
    def flush(_: re.Match[str]) -> tuple[int, bytes]:
        access.flush_authorizer_cache()
        return 202, b""

    return flush


def durable_services(resources: Resources, data_dir: Path) -> list[ServiceState]:
    """What the durable state keeps, from the registered services, in their order: the tables'
    items, the queues' messages, the API keys, the buckets' objects (their bodies in files of their
    own in ``data_dir``)."""
    stack = LocalStack(StackOptions(region=resources.region, data_dir=data_dir))
    stack.resources = resources
    parts = [make().durable_state(stack, data_dir) for make in SERVICES]
    return [part for part in parts if part is not None]


def invoked_by_name(functions: Iterable[FunctionSpec]) -> set[str]:
    """The functions whose name another function is given in its environment (to invoke it)."""
    specs = list(functions)
    values = [value for spec in specs for value in spec.environment.values()]
    return {
        spec.name
        for spec in specs
        if any(value == spec.name or f'"{spec.name}"' in value for value in values)
    }
