"""The edge's pre-flight (`make deploy` runs it before `sam deploy`): a deploy whose edge would fail
in CloudFormation is refused at once, saying what to pass (stack_tools/edge_preflight.py)."""

from pathlib import Path

import pytest

from stack_tools.__main__ import main
from stack_tools.edge_preflight import EdgePlan, refusals, warnings
from tests.e2e.conftest import PROJECT_ROOT

SAMCONFIG = PROJECT_ROOT / "samconfig.toml"
EU_CERTIFICATE = "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b"
US_CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/2c3d"
EDGE_ACL = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/edge/4e5f"


def test_a_custom_domain_outside_us_east_1_needs_a_us_east_1_certificate() -> None:
    # Given a stack in eu-west-1 whose domain has only its regional certificate
    plan = EdgePlan(region="eu-west-1", domain_name="sho.rt", certificate_arn=EU_CERTIFICATE)
    # Then the deploy is refused, naming the parameter to pass
    [refusal] = refusals(plan)
    assert "EdgeCertificateArn" in refusal and "us-east-1" in refusal
    # And with a us-east-1 certificate it goes ahead
    assert (
        refusals(EdgePlan(region="eu-west-1", domain_name="sho.rt", edge_certificate_arn=US_CERTIFICATE))
        == []
    )


def test_an_edge_certificate_from_another_region_is_refused() -> None:
    plan = EdgePlan(region="eu-west-1", domain_name="sho.rt", edge_certificate_arn=EU_CERTIFICATE)
    [refusal] = refusals(plan)
    assert "eu-west-1" in refusal


def test_in_us_east_1_the_regional_certificate_serves_the_edge_too() -> None:
    assert refusals(EdgePlan(region="us-east-1", domain_name="sho.rt", certificate_arn=US_CERTIFICATE)) == []


def test_a_regional_web_acl_cannot_guard_the_edge() -> None:
    regional = "arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/api/6a7b"
    [refusal] = refusals(EdgePlan(region="eu-west-1", edge_web_acl_arn=regional))
    assert "CLOUDFRONT" in refusal
    assert refusals(EdgePlan(region="eu-west-1", edge_web_acl_arn=EDGE_ACL)) == []


def test_without_the_edge_nothing_is_checked() -> None:
    assert (
        refusals(
            EdgePlan(region="eu-west-1", edge="off", domain_name="sho.rt", certificate_arn=EU_CERTIFICATE)
        )
        == []
    )


def test_a_domain_app_site_association_the_api_would_refuse_is_refused_before_the_deploy() -> None:
    def plan(documents: str) -> EdgePlan:
        return EdgePlan(region="us-east-1", domains="go.example", domain_app_site_associations=documents)

    # A domain of Domains with its document goes ahead
    assert refusals(plan('{"go.example": {"applinks": {"details": []}}}')) == []
    # A name not among Domains, a value that is not a document, text that is not JSON: refused
    [unknown] = refusals(plan('{"og.example": {}}'))
    assert "og.example" in unknown and "(go.example)" in unknown
    [not_a_document] = refusals(plan('{"go.example": "TEAM.app"}'))
    assert "must be a JSON object (the document)" in not_a_document
    [not_json] = refusals(plan("{go.example: {}}"))
    assert not_json.startswith("DomainAppleAppSiteAssociations is not JSON")


def test_an_open_shortener_behind_the_edge_without_edge_rate_rules_is_warned() -> None:
    assert warnings(EdgePlan(region="us-east-1", access="open"))
    assert not warnings(EdgePlan(region="us-east-1", access="open", edge_web_acl_arn=EDGE_ACL))


def test_the_command_reads_samconfig_and_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the project's dev environment deployed to eu-west-1 with a custom domain on the command line
    arguments = ["check-edge", "--config-file", str(SAMCONFIG), "--region", "eu-west-1"]
    overrides = ["--parameter-overrides", f"DomainName=sho.rt CertificateArn={EU_CERTIFICATE}"]
    # Then it exits 1 before sam deploy runs, saying what to pass
    assert main(arguments + overrides) == 1
    assert "EdgeCertificateArn" in capsys.readouterr().err
    # And the defaults pass
    assert main(arguments) == 0


def test_a_missing_samconfig_still_checks_the_command_line(tmp_path: Path) -> None:
    arguments = ["check-edge", "--config-file", str(tmp_path / "none.toml"), "--region", "ap-south-1"]
    assert main([*arguments, "--parameter-overrides", "DomainName=sho.rt"]) == 1
