"""The Lambda layer's pins: the same as the project's, and boto3 next to the botocore it ships."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pins(lines: list[str]) -> dict[str, str]:
    """{name: "name==version"} of requirement lines (extras kept in the value, not the name)."""
    found = {}
    for line in (line.split("#", 1)[0].strip() for line in lines):
        if line:
            found[line.split("==", 1)[0].split("[", 1)[0].lower()] = line
    return found


def test_every_layer_pin_is_the_projects_own() -> None:
    # Given the layer's requirements and the project's runtime dependencies
    layer = pins((ROOT / "shared" / "requirements.txt").read_text().splitlines())
    project = pins(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    # Then they name the same packages at the same exact versions
    assert layer == project
    assert all("==" in pin for pin in layer.values())


def test_the_layer_ships_boto3_with_its_botocore() -> None:
    # Given the layer's requirements (a dependency of the tracer brings botocore into the layer)
    layer = pins((ROOT / "shared" / "requirements.txt").read_text().splitlines())
    # Then boto3 is pinned beside botocore, at the same release
    assert layer["boto3"].split("==")[1] == layer["botocore"].split("==")[1]


def test_the_workers_own_pins_are_the_local_stacks() -> None:
    # Given the jobs worker's requirements (beside the layer) and the local stack's dependencies,
    # which the worker runs on locally
    worker = pins((ROOT / "functions" / "worker" / "requirements.txt").read_text().splitlines())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    local = pins(project["optional-dependencies"]["local"])
    # Then the worker's pins are the local stack's, exact
    assert worker and all(local.get(name) == pin and "==" in pin for name, pin in worker.items())
