"""The edge's cache (a CloudFront distribution): changed codes invalidated, in one request.

A change to a link (disable, delete, a new URL, new limits) must not be answered from the edge for
the rest of its s-maxage: the paths of the changed codes are invalidated in one CreateInvalidation.
Invalidation is priced per path (the first 1,000 a month free, then $0.005 a path) and a wildcard
counts as one path ("Invalidate files",
https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/Invalidation.html): more than
``WILDCARD_ABOVE`` codes at once are invalidated as ``/*``, which bounds any change's cost to one
path and empties the cache (every code then misses once).

The function cannot name the distribution in its environment (its origin is the API, whose routes
name the function): it finds it once per container by the comment the template gives it, and with
it the host that short URLs name when no base is configured (its alias, else its own domain)."""

import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from botocore.exceptions import BotoCoreError, ClientError

from shortener import aws

log = logging.getLogger(__name__)

WILDCARD_ABOVE = 1000


class EdgeCache:
    """The distribution whose comment is ``comment`` (template.yaml's EdgeDistribution)."""

    def __init__(self, comment: str, client: Any = None) -> None:
        self.comment = comment
        self._client = client
        self._distribution_id: str | None = None
        self._host: str | None = None

    def invalidate(self, codes: Sequence[str]) -> bool:
        """Invalidate the redirects of ``codes`` at the edge: whether CloudFront took the request."""
        if not codes:
            return True
        if len(codes) > WILDCARD_ABOVE:
            return self.invalidate_all()
        return self._invalidate(sorted({"/" + quote(code, safe="") for code in codes}))

    def invalidate_all(self) -> bool:
        """Invalidate everything the edge holds (one wildcard path): whether CloudFront took it."""
        return self._invalidate(["/*"])

    def base_url(self) -> str | None:
        """``https://<host>/`` of the distribution: its first alias (the custom domain), else its
        cloudfront.net domain; None when it cannot be found."""
        try:
            self._distribution()
        except (ClientError, BotoCoreError):
            log.exception("The edge's distribution could not be listed")
            return None
        return f"https://{self._host}/" if self._host else None

    def _invalidate(self, paths: list[str]) -> bool:
        try:
            distribution = self._distribution()
            if distribution is None:
                log.warning("No distribution with the comment %r: nothing invalidated", self.comment)
                return False
            self._cloudfront().create_invalidation(
                DistributionId=distribution,
                InvalidationBatch={
                    "Paths": {"Quantity": len(paths), "Items": paths},
                    "CallerReference": f"{time.time_ns()}-{uuid.uuid4().hex[:8]}",
                },
            )
        except (ClientError, BotoCoreError):
            log.exception("The edge's invalidation of %d paths failed", len(paths))
            return False
        return True

    def _distribution(self) -> str | None:
        if self._distribution_id is None:
            pages = self._cloudfront().get_paginator("list_distributions").paginate()
            for page in pages:
                for summary in page.get("DistributionList", {}).get("Items", []):
                    if summary.get("Comment") == self.comment:
                        aliases = summary.get("Aliases", {}).get("Items") or [summary["DomainName"]]
                        self._distribution_id, self._host = str(summary["Id"]), str(aliases[0])
                        return self._distribution_id
        return self._distribution_id

    def _cloudfront(self) -> Any:
        return self._client if self._client is not None else aws.cloudfront()
