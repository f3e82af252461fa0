"""Each domain's apple-app-site-association document (docs/domains.md): brands with apps of their
own list their own app ids. The default domain serves ``AppleAppSiteAssociation``, and so does any
other domain that ``DomainAppleAppSiteAssociations`` does not name. No AWS calls."""

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AppSiteAssociations:
    """The documents as served (JSON text): the default one and the other domains' own, by name."""

    default: str
    by_domain: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls, default: Mapping[str, Any], by_domain: Mapping[str, Mapping[str, Any]]
    ) -> "AppSiteAssociations":
        """Serialised once: every request for them answers the same bytes."""
        return cls(_compact(default), {name: _compact(document) for name, document in by_domain.items()})

    def for_domain(self, domain: str | None) -> str:
        """The document a request on ``domain`` gets (None: the default domain)."""
        return self.by_domain.get(domain, self.default) if domain else self.default


def documents_by_domain(value: Any) -> dict[str, dict[str, Any]]:
    """``DomainAppleAppSiteAssociations`` (parsed JSON) checked for its shape: an object whose every
    value is an object (a document), its names in lower case. ValueError naming what is wrong."""
    if not isinstance(value, dict):
        raise ValueError(
            "DomainAppleAppSiteAssociations must be a JSON object mapping a domain to its document, "
            f'such as {{"go.example.com": {{"applinks": {{"details": []}}}}}}; got {type(value).__name__}'
        )
    documents = {}
    for name, document in value.items():
        if not isinstance(document, dict):
            raise ValueError(
                f"DomainAppleAppSiteAssociations['{name}'] must be a JSON object (the document), "
                f"not {type(document).__name__}"
            )
        documents[str(name).strip().lower()] = document
    return documents


def check_domain_names(documents: Mapping[str, Any], domains: Collection[str]) -> None:
    """ValueError when ``documents`` names a domain that is not one of the stack's other domains
    (a CloudFormation rule cannot parse JSON: the functions' settings check it)."""
    unknown = [name for name in documents if name not in domains]
    if unknown:
        served = ", ".join(domains) or "none, Domains is empty"
        raise ValueError(
            f"DomainAppleAppSiteAssociations names {', '.join(unknown)}: not among the stack's other "
            f"domains ({served}); the default domain's document is AppleAppSiteAssociation"
        )


def _compact(document: Mapping[str, Any]) -> str:
    return json.dumps(document, separators=(",", ":"))
