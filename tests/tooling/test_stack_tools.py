"""What `make deploy` reads from samconfig.toml to choose between a guided and a direct deploy."""

from pathlib import Path

import pytest

from stack_tools.__main__ import main
from stack_tools.stacks import StackToolError, deploy_parameters, stack_name_of
from tests.e2e.conftest import PROJECT_ROOT

SAMCONFIG = PROJECT_ROOT / "samconfig.toml"


def test_the_projects_environments_deploy_without_questions() -> None:
    # Given the committed samconfig.toml, dev (default) and prod have their deploy parameters
    assert main(["configured", "--config-file", str(SAMCONFIG), "--config-env", "default"]) == 0
    assert main(["configured", "--config-file", str(SAMCONFIG), "--config-env", "prod"]) == 0
    assert stack_name_of(SAMCONFIG, "prod") == "bulk-shortener-prod"
    assert deploy_parameters(SAMCONFIG, "prod")["capabilities"] == "CAPABILITY_IAM"


def test_a_new_environment_is_deployed_guided(tmp_path: Path) -> None:
    # Given an environment samconfig.toml does not know, or no samconfig.toml at all
    assert main(["configured", "--config-file", str(SAMCONFIG), "--config-env", "staging"]) == 1
    assert main(["configured", "--config-file", str(tmp_path / "none.toml"), "--config-env", "default"]) == 1
    # And deleting it by environment says which name to pass instead
    with pytest.raises(StackToolError, match="STACK=<stack name>"):
        stack_name_of(SAMCONFIG, "staging")
