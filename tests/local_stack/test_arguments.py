"""The local stack's arguments: what `make deploy` refuses before CloudFormation sees it, `python -m
local_stack` refuses before anything starts."""

from pathlib import Path

import pytest

from local_stack.__main__ import main

CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/local"
DOMAINS = ["--param", "Domains=go.example", "--param", f"EdgeCertificateArn={CERTIFICATE}"]


def test_an_app_site_association_map_the_api_would_refuse_stops_the_start_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    map_ = 'DomainAppleAppSiteAssociations={"og.example": {}}'
    assert main(["--data-dir", str(data), *DOMAINS, "--param", map_]) == 1
    assert "cannot start: DomainAppleAppSiteAssociations names og.example" in capsys.readouterr().err
    # and nothing was started or written
    assert not data.exists()
