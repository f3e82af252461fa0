"""API Gateway's stage cache, one entry at a time.

A takedown must not be served from the prod stage's cache for the rest of its TTL. Two ways exist
(API Gateway developer guide, "Cache settings for REST APIs"): FlushStageCache empties the whole
stage cache (every redirect then misses until the cache refills, and it is a control-plane call
with a low rate limit: a bulk clean-up of many links would be throttled), or a request for the one
entry with `Cache-Control: max-age=0`, signed with SigV4 by a principal allowed
`execute-api:InvalidateCache`, which fetches the fresh answer and replaces that entry. This is the
second: it touches only the code that changed. A stage's default is to require authorisation for
it and to ignore the header from anyone else (requireAuthorizationForCacheControl true,
unauthorizedCacheControlHeaderStrategy SUCCEED_WITH_RESPONSE_HEADER), so clients cannot bypass
the cache."""

from functools import cache
from urllib.parse import quote

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import BotoCoreError
from botocore.httpsession import URLLib3Session

from shortener.clicks.model import STAGE_CACHE_REFRESH_AGENT

# The request reaches the API's own function through API Gateway: a cold start may come first.
_TIMEOUT_SECONDS = 10


class StageCache:
    """The cache of one API stage, at ``base_url`` (ending with "/", the stage's path included)."""

    def __init__(self, base_url: str, region: str) -> None:
        self.base_url = base_url
        self.region = region

    def invalidate(self, code: str) -> int | None:
        """Replace the cached answer of ``GET /{code}`` with a fresh one: its HTTP status, or None
        when the request could not be made."""
        credentials = _session().get_credentials()
        if credentials is None:
            return None
        request = AWSRequest(
            method="GET",
            url=self.base_url + quote(code, safe=""),
            # The user agent tells the access log's reader (the click collector) it is no click.
            headers={
                "Cache-Control": "max-age=0",
                "Accept": "application/json",
                "User-Agent": STAGE_CACHE_REFRESH_AGENT,
            },
        )
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", self.region).add_auth(request)
        try:
            response = _http().send(request.prepare())
        except BotoCoreError:
            return None
        return int(response.status_code)


@cache
def _session() -> boto3.Session:
    return boto3.Session()


@cache
def _http() -> URLLib3Session:
    return URLLib3Session(timeout=_TIMEOUT_SECONDS)
