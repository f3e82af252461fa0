"""The edge's us-east-1 parts, checked before `sam deploy` (`make deploy` runs it first).

CloudFront reads a custom domain's certificate from ACM in us-east-1 only, whatever the stack's
region ("Requirements for using SSL/TLS certificates with CloudFront",
https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cnames-and-https-requirements.html),
and a web ACL for CloudFront (scope CLOUDFRONT) is created in us-east-1 ("Using AWS WAF with Amazon
CloudFront", https://docs.aws.amazon.com/waf/latest/developerguide/cloudfront-features.html). A stack
elsewhere takes both by ARN (EdgeCertificateArn, EdgeWebAclArn). CloudFormation would fail on a
wrong one only halfway, while it creates the distribution (a create that can take minutes and then
rolls back): this refuses such a deploy at once, saying what to pass.

Each domain's apple-app-site-association (DomainAppleAppSiteAssociations, JSON) is checked here
too, as the API function's settings check it: a CloudFormation rule cannot parse JSON, and a
deploy that passed would have the API answer every request with an error until the next one."""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from shortener.links.app_site_associations import check_domain_names, documents_by_domain

EDGE_REGION = "us-east-1"
_ARN = re.compile(r"arn:aws[a-z-]*:(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):\d{12}:(?P<resource>.+)")


@dataclass(frozen=True)
class EdgePlan:
    """What a deploy asks of the edge: the stack's region and the parameters the edge reads."""

    region: str
    edge: str = "on"
    domain_name: str = ""
    certificate_arn: str = ""
    edge_certificate_arn: str = ""
    edge_web_acl_arn: str = ""
    access: str = "keys"
    domains: str = ""
    domain_app_site_associations: str = ""

    @classmethod
    def of(cls, region: str, parameters: Mapping[str, str]) -> "EdgePlan":
        """The plan from a deploy's parameters (template defaults where a parameter is not given)."""
        return cls(
            region=region,
            edge=parameters.get("Edge", "on"),
            domain_name=parameters.get("DomainName", ""),
            certificate_arn=parameters.get("CertificateArn", ""),
            edge_certificate_arn=parameters.get("EdgeCertificateArn", ""),
            edge_web_acl_arn=parameters.get("EdgeWebAclArn", ""),
            access=parameters.get("Access", "keys"),
            domains=parameters.get("Domains", ""),
            domain_app_site_associations=parameters.get("DomainAppleAppSiteAssociations", ""),
        )


def refusals(plan: EdgePlan) -> list[str]:
    """Why the deploy would fail, one sentence each; empty when it may go ahead."""
    found = _app_site_association_refusals(plan)
    if plan.edge != "on":
        return found
    if plan.domain_name:
        certificate = plan.edge_certificate_arn or plan.certificate_arn
        where = _region_of(certificate, "acm")
        if not plan.edge_certificate_arn and plan.region != EDGE_REGION:
            found.append(
                f"DomainName {plan.domain_name} on the edge needs a certificate in {EDGE_REGION} "
                f"(CloudFront reads none elsewhere) and this stack deploys to {plan.region}: request "
                f"one for {plan.domain_name} in ACM in {EDGE_REGION} and pass its ARN as "
                "EdgeCertificateArn (or deploy with Edge=off)."
            )
        elif where is None:
            found.append(f"EdgeCertificateArn {certificate!r} is not an ACM certificate ARN.")
        elif where != EDGE_REGION:
            found.append(
                f"The edge's certificate {certificate} is in {where}; CloudFront needs one in "
                f"{EDGE_REGION}: pass an ACM certificate of {EDGE_REGION} as EdgeCertificateArn."
            )
    if plan.edge_web_acl_arn:
        match = _ARN.fullmatch(plan.edge_web_acl_arn)
        if (
            match is None
            or (match["service"], match["region"]) != ("wafv2", EDGE_REGION)
            or not match["resource"].startswith("global/webacl/")
        ):
            found.append(
                f"EdgeWebAclArn {plan.edge_web_acl_arn} is not a web ACL of scope CLOUDFRONT: create "
                f"it in {EDGE_REGION} with scope CLOUDFRONT (its ARN reads "
                f"arn:aws:wafv2:{EDGE_REGION}:<account>:global/webacl/...)."
            )
    return found


def _app_site_association_refusals(plan: EdgePlan) -> list[str]:
    """What the API's settings would refuse of DomainAppleAppSiteAssociations."""
    text = plan.domain_app_site_associations
    if not text.strip():
        return []
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return [f"DomainAppleAppSiteAssociations is not JSON ({exc})."]
    try:
        check_domain_names(documents_by_domain(parsed), [name for name in plan.domains.split(",") if name])
    except ValueError as exc:
        return [f"{exc}."]
    return []


def warnings(plan: EdgePlan) -> list[str]:
    """What would deploy but leave a gap, one sentence each."""
    if plan.edge == "on" and plan.access == "open" and not plan.edge_web_acl_arn:
        return [
            "Access=open with the edge and no EdgeWebAclArn: the per-address rate rules of the API's "
            "own stage do not see visitors behind the edge (they see CloudFront's addresses); put them "
            "in a CLOUDFRONT web ACL and pass its ARN (docs/edge.md)."
        ]
    return []


def _region_of(arn: str, service: str) -> str | None:
    match = _ARN.fullmatch(arn)
    if match is None or match["service"] != service:
        return None
    return match["region"]
