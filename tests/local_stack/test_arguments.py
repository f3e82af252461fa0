"""The local stack's arguments: what `make deploy` refuses before CloudFormation sees it, `python -m
local_stack` refuses before anything starts."""

import pytest

from local_stack.__main__ import parse_args

CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/local"
DOMAINS = ["--param", "Domains=go.example", "--param", f"EdgeCertificateArn={CERTIFICATE}"]


def test_an_app_site_association_map_the_api_would_refuse_stops_the_start_saying_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_args([*DOMAINS, "--param", 'DomainAppleAppSiteAssociations={"og.example": {}}'])
    assert stopped.value.code == 2
    assert "DomainAppleAppSiteAssociations names og.example" in capsys.readouterr().err


def test_a_map_of_the_stacks_own_domains_is_taken() -> None:
    document = '{"go.example": {"applinks": {"details": []}}}'
    options = parse_args([*DOMAINS, "--param", f"DomainAppleAppSiteAssociations={document}"])
    assert options.params["DomainAppleAppSiteAssociations"] == document
