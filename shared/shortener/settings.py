"""Per-function settings: one pydantic model each, composed from small mixins, parsed once per
container from the environment that template.yaml sets. Logic never reads os.environ."""

import json
import os
from functools import lru_cache
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from shortener.links.app_site_associations import AppSiteAssociations, check_domain_names, documents_by_domain
from shortener.links.domains import ShortUrls
from shortener.links.urls import UrlPolicy


def _comma_separated(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip().lower() for item in value.split(",") if item.strip()]
    return value


def _json_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc})") from exc
    return value


def _documents_by_domain(value: Any) -> Any:
    return documents_by_domain(_json_text(value))


class _FromEnvironment(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class WebhooksMixin(_FromEnvironment):
    # The owners' webhook endpoints ("": the stack announces nothing), and the bus events for
    # them are put on.
    WEBHOOKS_TABLE: str = ""
    WEBHOOKS_BUS: str = "default"
    # Set by the local stack only, which lives on loopback: deliveries may go to http://127.0.0.1
    # receivers there (docs/webhooks.md). Never set on AWS.
    LOOPBACK_RECEIVERS: bool = False


class AuditMixin(_FromEnvironment):
    # The audit log ("": none kept), and how long an entry is kept.
    AUDIT_TABLE: str = ""
    AUDIT_RETENTION_DAYS: int = Field(default=400, ge=1)


class TablesMixin(_FromEnvironment):
    LINKS_TABLE: str
    JOBS_TABLE: str = ""
    TOKENS_TABLE: str = ""
    BLOCKLIST_TABLE: str = ""


class LinksMixin(_FromEnvironment):
    CODE_STRATEGY: Literal["counter", "hash"] = "counter"
    CODE_ALPHABET: str = ""
    # The stack's own secret (the UUID of its stack id): keys the codes when no alphabet is set.
    CODE_KEY: str = ""
    # The API's custom domain, if it has one: links to it are refused like the other own hosts.
    DOMAIN_NAME: str = ""
    # The stack's other short domains (template.yaml's Domains), each answering its own links.
    DOMAINS: Annotated[list[str], BeforeValidator(_comma_separated)] = []
    # Where each of them answers when that is not https://<name>/: the local stack serves each on a
    # loopback port of its own ({"<name>": "http://127.0.0.1:<port>/"}).
    DOMAIN_URLS: Annotated[dict[str, str], BeforeValidator(_json_text)] = {}
    FIND_IF_EXISTS: bool = True
    ALLOWED_SCHEMES: Annotated[list[str], BeforeValidator(_comma_separated)] = ["http", "https"]
    MAX_URL_LENGTH: int = Field(default=2048, ge=16, le=32768)
    PUBLIC_BASE_URL: str = ""
    # The edge's distribution, by its comment (template.yaml's EdgeDistribution): changes invalidate
    # its answers. Empty: no edge.
    EDGE_DISTRIBUTION: str = ""
    # The most ids one counter write reserves for this container's single-link requests (blocks grow
    # to it: 1, 1, 2, 4, ... as links are made).
    ID_BLOCK_SIZE: int = Field(default=10, ge=1, le=1000)
    # The stage caches GET /{code} by its path (Stage=prod without the edge): a takedown
    # invalidates the code's entry there, and a link that answers each visitor is refused.
    API_CACHE_ENABLED: bool = False

    @field_validator("CODE_ALPHABET")
    @classmethod
    def _alphabet_is_a_permutation(cls, value: str) -> str:
        if value and (len(set(value)) != len(value) or not value.isascii() or not value.isalnum()):
            raise ValueError("CODE_ALPHABET must be distinct ASCII letters and digits")
        return value

    def short_urls(self, default_base: str) -> ShortUrls:
        """Where each domain's short links answer, the default domain's at ``default_base``."""
        others = {name: self.DOMAIN_URLS.get(name, f"https://{name}/") for name in self.DOMAINS}
        return ShortUrls(default_base, self.DOMAIN_NAME.lower(), others)

    def url_policy(self) -> UrlPolicy:
        own_hosts = {_host_of(self.PUBLIC_BASE_URL), self.DOMAIN_NAME or None, *self.DOMAINS}
        return UrlPolicy(
            allowed_schemes=frozenset(self.ALLOWED_SCHEMES),
            max_length=self.MAX_URL_LENGTH,
            own_hosts=frozenset(host for host in own_hosts if host),
            answers_each_visitor=not self.API_CACHE_ENABLED,
        )


class LoopBoundsMixin(_FromEnvironment):
    MIN_LOOPS: int = Field(default=0, ge=0)
    MAX_LOOPS: int = Field(default=10, ge=1)
    # Queued messages (each a pack of bulk rows) one loop is expected to keep up with: reconcile
    # wants ceil(backlog / MESSAGES_PER_LOOP) loops, clamped to MIN_LOOPS..MAX_LOOPS.
    MESSAGES_PER_LOOP: int = Field(default=20, ge=1)
    # New work of n messages starts at least min(n, LOOPS_FOR_NEW_WORK) loops, so a small job's
    # messages run side by side (shortener.loops.scaling.LoopBounds.for_new_work).
    LOOPS_FOR_NEW_WORK: int = Field(default=1, ge=1)


class WorkLoopsMixin(LoopBoundsMixin):
    """Functions that queue work start the loops it needs ({"<queue name>": "<function name>"};
    empty: they leave it to the alarms and the restarter)."""

    LOOP_FUNCTIONS: Annotated[dict[str, str], BeforeValidator(_json_text)] = {}


class BulkMixin(_FromEnvironment):
    BULK_QUEUE_URL: str = ""
    # The bucket of direct uploads and results files.
    BULK_BUCKET: str = ""
    # Rows packed into one SQS message, by count and by bytes of row text: far below the 256 KiB
    # of a SendMessageBatch call, and a chunk item of one message far below DynamoDB's 400 KB.
    BULK_ROWS_PER_MESSAGE: int = Field(default=250, ge=1, le=1000)
    BULK_MESSAGE_BYTES: int = Field(default=64_000, ge=1024, le=200_000)
    JOB_RETENTION_DAYS: int = Field(default=30, ge=1)
    # What one owner may submit per UTC day (rows of bulk files, and their bytes).
    OWNER_DAILY_ROWS: int = Field(default=2_000_000, ge=1)
    OWNER_DAILY_BYTES: int = Field(default=10 * 1024**3, ge=1)
    # Anonymous callers (Access=open): their own daily rows, and their largest direct upload
    # (0: none of their own; with Access=keys they never reach the functions).
    ANONYMOUS_DAILY_ROWS: int = Field(default=0, ge=0)
    ANONYMOUS_MAX_UPLOAD_BYTES: int = Field(default=0, ge=0)
    # The jobs worker: splits uploads, writes results files ("" where there is none).
    FILES_FUNCTION: str = ""
    # Set by Lambda: a job's compute is counted as time times this.
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: int = Field(default=0, ge=0)


class ApiSettings(TablesMixin, LinksMixin, BulkMixin, WorkLoopsMixin, WebhooksMixin, AuditMixin):
    """The API function."""

    REDIRECT_STATUS: Annotated[Literal[301, 302, 307, 308], BeforeValidator(int)] = 301
    REDIRECT_CACHE_CONTROL: str = "private, max-age=90"
    # Behind the edge: how long it may keep a plain link's redirect (s-maxage; 0 = no edge).
    EDGE_CACHE_SECONDS: int = Field(default=0, ge=0, le=86400)
    # Behind the edge: the X-Shortener-Edge value the edge's origin (an HTTP API) must see; its
    # requests without it are refused (shortener.http.edge_origin). Empty: every one is refused.
    EDGE_ORIGIN_SECRET: str = ""
    # How long a container remembers a code it resolved, and how often it checks whether any link
    # was taken down or changed since (then it forgets everything).
    REDIRECT_CACHE_SECONDS: float = Field(default=300, ge=0)
    REDIRECT_CACHE_SIZE: int = Field(default=10_000, ge=0)
    REDIRECT_CACHE_CHECK_SECONDS: float = Field(default=1.0, ge=0)
    # How often a container reads the blocklist again: a blocked host's links answer 410 within
    # this long in every container (at once in the one that blocked it).
    BLOCKLIST_REFRESH_SECONDS: float = Field(default=5.0, ge=0)
    # Where the API's execute-api endpoint is; empty: https://{api id}.execute-api.{region}....
    # The local stack points it at itself, as AWS_ENDPOINT_URL points boto3 at its AWS.
    AWS_ENDPOINT_URL_EXECUTE_API: str = ""
    # The stack's custom domain ("" without one): answers that came in on it say HSTS.
    CUSTOM_DOMAIN: str = ""
    # Where boto3 sends S3 requests when not to AWS (the local stack): the page's uploads go there.
    AWS_ENDPOINT_URL: str = ""
    AWS_ENDPOINT_URL_S3: str = ""
    AWS_REGION: str = "us-east-1"
    # The default domain's apple-app-site-association document, and any other domain's that the
    # next one does not name (docs/domains.md).
    APPLE_APP_SITE_ASSOCIATION: Annotated[dict[str, Any], BeforeValidator(_json_text)] = {
        "applinks": {"details": []}
    }
    # The other domains' own documents ({"<domain>": {...}}): each name one of DOMAINS.
    DOMAIN_APPLE_APP_SITE_ASSOCIATIONS: Annotated[
        dict[str, dict[str, Any]], BeforeValidator(_documents_by_domain)
    ] = {}
    # Below API Gateway's 10 MB cap and Lambda's 6 MB synchronous payload (base64 adds a third).
    MAX_UPLOAD_BYTES: int = Field(default=4_000_000, ge=1)
    # Rows per upload: bounds the messages one request sends within the API's 29 s.
    MAX_UPLOAD_ROWS: int = Field(default=100_000, ge=1)
    # "arn:<partition>:sns:<region>:<account>:" where jobs may name an SNS topic of the stack's own
    # account and region for their job-ended message (AllowJobTopics); "" where they may not.
    JOB_TOPIC_PREFIX: str = ""
    # A direct upload is one presigned PUT: S3 takes at most 5 GiB that way.
    MAX_DIRECT_UPLOAD_BYTES: int = Field(default=5 * 1024**3, ge=1, le=5 * 1024**3)
    # How long presigned upload and download links work.
    UPLOAD_URL_SECONDS: int = Field(default=3600, ge=60, le=7 * 24 * 3600)
    RESULTS_URL_SECONDS: int = Field(default=3600, ge=60, le=7 * 24 * 3600)
    # Jobs up to this many rows get their results inline (text/csv); larger ones only as the file.
    INLINE_RESULTS_ROWS: int = Field(default=20_000, ge=0)
    # The click counters the collector writes (read by the clicks routes); empty: no clicks.
    CLICKS_TABLE: str = ""
    # Whether the collector keeps counters in it (KeepClickCounters): without them, every report
    # is asked of the click events.
    CLICK_COUNTERS: bool = True
    # The click events (Athena: its workgroup, and the Glue database and table); empty: none kept.
    CLICK_EVENTS_WORKGROUP: str = ""
    CLICK_EVENTS_DATABASE: str = ""
    CLICK_EVENTS_TABLE: str = ""
    # Which rule answered each request of a rule link, joined to the events by request id.
    CLICK_ANSWERS_TABLE: str = ""
    # Where test deliveries and replays are queued for the webhooks function.
    WEBHOOKS_QUEUE_URL: str = ""
    # The page's sign-in (docs/sign-in.md): the hosted sign-in's base URL and the page's app
    # client; both empty when sign-in is off.
    SIGN_IN_URL: str = ""
    SIGN_IN_CLIENT_ID: str = ""

    @model_validator(mode="after")
    def _app_site_associations_name_domains(self) -> Self:
        check_domain_names(self.DOMAIN_APPLE_APP_SITE_ASSOCIATIONS, self.DOMAINS)
        return self

    def app_site_associations(self) -> AppSiteAssociations:
        """Each domain's apple-app-site-association document, as served."""
        return AppSiteAssociations.of(
            self.APPLE_APP_SITE_ASSOCIATION, self.DOMAIN_APPLE_APP_SITE_ASSOCIATIONS
        )


class WebhookSenderSettings(WebhooksMixin, AuditMixin):
    """The webhooks function (the sender of deliveries); the audit log records an endpoint
    disabled for its failures."""

    WEBHOOKS_QUEUE_URL: str
    # At most this many deliveries a second to one endpoint (WebhookDeliveriesPerSecond).
    WEBHOOK_DELIVERIES_PER_SECOND: int = Field(default=10, ge=1, le=1000)


class SignInAuditSettings(AuditMixin):
    """The sign-in audit function (the user pool's post-authentication trigger)."""

    AUDIT_TABLE: str


class PollerSettings(TablesMixin, LinksMixin):
    """The poller (one loop)."""

    # Stop polling and re-invoke when less than this is left of the invocation.
    REINVOKE_MARGIN_SECONDS: float = Field(default=30, ge=1)
    RECEIVE_WAIT_SECONDS: int = Field(default=20, ge=0, le=20)
    # Long work refreshes the heartbeat this often, far inside the restarter's stale threshold.
    HEARTBEAT_INTERVAL_SECONDS: float = Field(default=30, gt=0)
    # The bulk queue's visibility timeout (the template sets both from one parameter): a batch
    # still being processed has its messages' timeout renewed every third of it.
    VISIBILITY_TIMEOUT_SECONDS: int = Field(default=120, ge=3, le=43_200)
    # Metrics are written this often (Powertools flushes only when the handler returns).
    METRICS_FLUSH_SECONDS: float = Field(default=60, gt=0)
    # Parallel DynamoDB writes while one message is processed.
    WRITE_THREADS: int = Field(default=8, ge=1, le=64)
    # Pace the loop's batch writes to the links table's throttles (shortener.loops.pacing).
    WRITE_PACING: bool = True
    JOB_RETENTION_DAYS: int = Field(default=30, ge=1)
    # The function that writes a job's results file once its last chunk is counted.
    FILES_FUNCTION: str = ""
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: int = Field(default=0, ge=0)


class WorkerSettings(TablesMixin, LinksMixin, BulkMixin, WorkLoopsMixin, WebhooksMixin):
    """The jobs worker (the template's FilesFunction): splits uploaded files into queued rows,
    writes results files, click reports and QR labels, runs batches of link changes."""

    # What a batch's takedowns expect the refreshed stage cache entry to answer (as the API's).
    REDIRECT_STATUS: Annotated[Literal[301, 302, 307, 308], BeforeValidator(int)] = 301
    AWS_REGION: str = "us-east-1"

    # Its own name (set by Lambda): a long split continues in a new invocation of it.
    AWS_LAMBDA_FUNCTION_NAME: str = ""
    # Messages queued between checkpoints of a split (at most these are queued again after a crash).
    SPLIT_CHECKPOINT_MESSAGES: int = Field(default=50, ge=1)
    # A split hands over to a new invocation when less than this is left of the current one.
    SPLIT_HANDOVER_SECONDS: float = Field(default=60, ge=1)
    # How long one writer of a results file holds it before another may take over.
    RESULTS_LEASE_SECONDS: int = Field(default=900, ge=30)
    # A job's QR labels build hands over to a new invocation when less than this is left.
    LABELS_HANDOVER_SECONDS: float = Field(default=120, ge=1)
    # The click counters that jobs' click reports read.
    CLICKS_TABLE: str = ""
    # Whether it keeps counters; without them, a job's click report is asked of the click events.
    CLICK_COUNTERS: bool = True
    CLICK_EVENTS_WORKGROUP: str = ""
    CLICK_EVENTS_DATABASE: str = ""
    CLICK_EVENTS_TABLE: str = ""
    CLICK_ANSWERS_TABLE: str = ""
    # The click events bucket, whose objects an erasure rewrites (DELETE /clicks).
    CLICK_EVENTS_BUCKET: str = ""


class LoopsMixin(LoopBoundsMixin):
    TOKENS_TABLE: str
    # {"<queue name>": "<function name>"}: which function drains which queue.
    LOOP_FUNCTIONS: Annotated[dict[str, str], BeforeValidator(_json_text)]


class ScalerSettings(LoopsMixin):
    """The scaler."""


class RestarterSettings(LoopsMixin):
    """The restarter."""

    STALE_HEARTBEAT_SECONDS: int = Field(default=180, ge=1)
    # A dead-lettered message's last attempt waits this long in its queue (SQS DelaySeconds).
    LAST_ATTEMPT_DELAY_SECONDS: int = Field(default=30, ge=0, le=900)
    JOBS_TABLE: str = ""
    # How long the chunk items of dead-lettered rows are kept (as a delivery's would be).
    JOB_RETENTION_DAYS: int = Field(default=30, ge=1)
    # The function that writes a job's results file, asked when a settlement completes a job.
    FILES_FUNCTION: str = ""
    # The links table, whose tag index the restarter backfills once after an upgrade
    # (shortener.links.backfill), for at most this long a run ("": no backfill).
    LINKS_TABLE: str = ""
    TAG_BACKFILL_SECONDS: float = Field(default=20, gt=0)


class AuthorizerSettings(_FromEnvironment):
    """The Lambda authorizer."""

    KEYS_TABLE: str
    ACCESS: Literal["keys", "open"] = "keys"
    # Access=open: the usage plan identifier of callers without a key.
    ANONYMOUS_USAGE_KEY: str = ""
    # Sign-in (docs/sign-in.md; all empty: off): the user pool whose access tokens are accepted in
    # X-Api-Key, the tokens' issuer (iss), the page's app client, and the usage plan identifier
    # that signed-in people are metered by.
    SIGN_IN_USER_POOL_ID: str = ""
    SIGN_IN_ISSUER: str = ""
    SIGN_IN_CLIENT_ID: str = ""
    SIGN_IN_USAGE_KEY: str = ""


class StageCacheMixin(_FromEnvironment):
    """Where the prod stage's cache is, for a function that refreshes its entries but is not the
    API's own (which learns its stage from each request)."""

    # https://{api id}.execute-api.{region}.amazonaws.com/{stage}/; empty: the stage has no cache.
    STAGE_URL: str = ""
    # The local stack points it at itself (see ApiSettings).
    AWS_ENDPOINT_URL_EXECUTE_API: str = ""
    AWS_REGION: str = "us-east-1"

    def stage_base_url(self) -> str:
        """The stage's URL ending with "/" ("" when the stage has no cache)."""
        if not self.STAGE_URL:
            return ""
        return (self.AWS_ENDPOINT_URL_EXECUTE_API or self.STAGE_URL).rstrip("/") + "/"


class ExpirerSettings(StageCacheMixin):
    """The expirer: refreshes the stage cache entries of links whose expiry has come."""

    LINKS_TABLE: str
    # How long one run may refresh entries before it leaves the rest to the next run (the
    # function's timeout is longer).
    EXPIRER_RUN_SECONDS: float = Field(default=50, gt=0)


class CollectorSettings(StageCacheMixin, WebhooksMixin):
    """The click collector."""

    CLICKS_TABLE: str
    # Whose link each clicked code is (the owner's top links).
    LINKS_TABLE: str = ""
    # Hourly click counts expire this many days after their hour.
    CLICK_RETENTION_DAYS: int = Field(default=400, ge=1)
    # Whether counters are kept (KeepClickCounters); without them only each batch's marker is
    # written (a batch delivered twice spends click limits once).
    CLICK_COUNTERS: bool = True
    # The click events' Firehose delivery stream ("": events are not sent).
    CLICK_EVENTS_STREAM: str = ""
    # ... and the answers' (which rule answered a request), joined to the events by request id.
    CLICK_ANSWERS_STREAM: str = ""


@lru_cache(maxsize=1)
def collector_settings() -> CollectorSettings:
    return CollectorSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def expirer_settings() -> ExpirerSettings:
    return ExpirerSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def webhook_sender_settings() -> WebhookSenderSettings:
    return WebhookSenderSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def sign_in_audit_settings() -> SignInAuditSettings:
    return SignInAuditSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def api_settings() -> ApiSettings:
    return ApiSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def poller_settings() -> PollerSettings:
    return PollerSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def worker_settings() -> WorkerSettings:
    return WorkerSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def scaler_settings() -> ScalerSettings:
    return ScalerSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def restarter_settings() -> RestarterSettings:
    return RestarterSettings.model_validate(os.environ)


@lru_cache(maxsize=1)
def authorizer_settings() -> AuthorizerSettings:
    return AuthorizerSettings.model_validate(os.environ)


def _host_of(base_url: str) -> str | None:
    if not base_url:
        return None
    # With its port (a loopback base URL's port tells the shortener apart from other local services).
    host = base_url.split("://", 1)[-1].split("/", 1)[0]
    return host.lower() or None
