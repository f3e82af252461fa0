"""Typed domain errors. Each carries its HTTP status and a stable machine word; the API maps them to
``{"error", "message"}`` answers in one place."""

from typing import ClassVar


class ShortenerError(Exception):
    """Base of every error a caller can cause; ``message`` is a sentence for a person."""

    status_code: ClassVar[int] = 400
    error: ClassVar[str] = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidUrlError(ShortenerError):
    status_code = 400
    error = "invalid_url"


class InvalidCodeError(ShortenerError):
    status_code = 400
    error = "invalid_code"


class InvalidRequestError(ShortenerError):
    status_code = 400
    error = "invalid_request"


class InvalidFieldsError(ShortenerError):
    """The request was readable but its fields are not what the contract asks for."""

    status_code = 422
    error = "invalid_request"


class AnswersEachVisitorError(InvalidFieldsError):
    """A link whose answer depends on the visitor, on a stack whose redirects a cache keyed by
    the path alone answers (docs/edge.md, "Links that answer each visitor")."""

    error = "cached_by_path"


class CodeTakenError(ShortenerError):
    status_code = 409
    error = "code_taken"


class LinkNotFoundError(ShortenerError):
    status_code = 404
    error = "not_found"


class WrongPasswordError(ShortenerError):
    """A password link's form was sent with a password that is not the link's."""

    status_code = 401
    error = "wrong_password"


class TooManyTriesError(ShortenerError):
    """Too many wrong passwords for one link from one client lately: ``retry_after`` seconds."""

    status_code = 429
    error = "too_many_tries"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NoPasswordError(ShortenerError):
    """A password was sent to a link that asks for none (``POST /{code}``)."""

    status_code = 405
    error = "method_not_allowed"


class BatchNotFoundError(ShortenerError):
    status_code = 404
    error = "batch_not_found"


class WebhookNotFoundError(ShortenerError):
    status_code = 404
    error = "webhook_not_found"


class DeliveryNotFoundError(ShortenerError):
    status_code = 404
    error = "delivery_not_found"


class JobNotFoundError(ShortenerError):
    status_code = 404
    error = "job_not_found"


class InvalidCsvError(ShortenerError):
    status_code = 400
    error = "invalid_csv"


class PayloadTooLargeError(ShortenerError):
    status_code = 413
    error = "payload_too_large"


class UnsupportedMediaTypeError(ShortenerError):
    status_code = 415
    error = "unsupported_media_type"


class StorageThrottledError(ShortenerError):
    """DynamoDB kept throttling after the retries with backoff: not the caller's fault and not a
    refusal (never a "code taken"); the same request can be sent again shortly."""

    status_code = 503
    error = "throttled"


class ServiceUnavailableError(ShortenerError):
    """A feature this deployment is not configured for."""

    status_code = 503
    error = "service_unavailable"


class CodesExhaustedError(Exception):
    """No free code could be found within the retry budget (an operational fault, not a caller's)."""


class LinkGoneError(ShortenerError):
    """The code was deleted or disabled by its owner or an admin; it is never given out again."""

    status_code = 410
    error = "gone"


class LinkExpiredError(LinkGoneError):
    """The link is past its ``expires_at`` or answered its last allowed click."""

    status_code = 410
    error = "expired"


class BlockedHostError(ShortenerError):
    """The URL's host (or a domain above it) is on the blocklist."""

    status_code = 400
    error = "blocked_host"


class NotBlockedError(ShortenerError):
    """The host to unblock is not on the blocklist."""

    status_code = 404
    error = "not_blocked"


class ErasureNotFoundError(ShortenerError):
    status_code = 404
    error = "erasure_not_found"


class ErasureUnderWayError(ShortenerError):
    """One erasure of an owner's clicks at a time: each reads every event file."""

    status_code = 409
    error = "erasure_under_way"


class ForbiddenError(ShortenerError):
    """The route is for admins."""

    status_code = 403
    error = "forbidden"


class UnknownDomainError(InvalidFieldsError):
    """A link asked for on a domain this stack does not serve."""

    error = "unknown_domain"


class DomainNotAllowedError(ShortenerError):
    """The caller's key or group does not allow making links on this domain."""

    status_code = 403
    error = "domain_not_allowed"


class ConflictError(ShortenerError):
    """The link changed while this request was changing it; read it again and retry."""

    status_code = 409
    error = "conflict"


class CodeKeyChangedError(ShortenerError):
    """The function runs under another code key than the one the id counter was started with:
    codes made now could equal existing ones, so none is written."""

    status_code = 503
    error = "code_key_changed"


class InvalidKeyRequestError(ShortenerError):
    """A key cannot be made as asked (a bad name, owner or role)."""

    status_code = 400
    error = "invalid_key_request"


class KeyNotFoundError(ShortenerError):
    status_code = 404
    error = "key_not_found"


class UsagePlanError(ShortenerError):
    """API Gateway refused a change to the usage plan's keys, or the authorizer cache flush."""

    status_code = 502
    error = "usage_plan_error"


class QuotaExceededError(ShortenerError):
    """The owner's daily quota of bulk rows or bytes is used up."""

    status_code = 429
    error = "quota_exceeded"


class MultipartUploadGoneError(Exception):
    """A multipart upload is no longer there (completed, aborted, or expired by the bucket's
    lifecycle rule): a build resuming it starts again (an operational case, not a caller's)."""
