"""Cognito's post-authentication trigger event, of the shape AWS documents ("Post authentication
Lambda trigger" and the common parameters of user pool triggers in the Cognito developer guide;
`sam local generate-event` has no user pool triggers)."""

import copy
import json
from pathlib import Path
from typing import Any

_EVENT = json.loads((Path(__file__).parent / "cognito_post_authentication.json").read_text())


def post_authentication_event(**changes: Any) -> dict[str, Any]:
    """The documented event, with top-level fields replaced by ``changes``."""
    return {**copy.deepcopy(_EVENT), **changes}
