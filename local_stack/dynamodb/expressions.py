"""DynamoDB condition and filter expressions parsed once per text, not once per item.

moto parses an expression into an operator tree on every use: a transaction's `Put` with
`attribute_not_exists(code)` parses it twice per item (to check it, then again in the put), so a
bulk message's claims parse the same text hundreds of times. The tree depends only on the
expression, its names and its values, and evaluating it changes nothing in it: the trees are kept
by those three (a bounded cache), and every item is evaluated against the kept tree. Parse errors
are not kept: a wrong expression is refused every time, as before."""

import json
from functools import lru_cache
from typing import Any

import moto.dynamodb.models as dynamodb_models
import moto.dynamodb.models.table as dynamodb_table
from moto.dynamodb import comparisons

# Expression texts in use at once: the stack's own few dozen, and room for a program's.
_KEPT_EXPRESSIONS = 512


def install() -> None:
    """Parse each expression once in moto's DynamoDB; idempotent."""
    if getattr(dynamodb_models.get_filter_expression, "_kept", False):
        return
    parse = comparisons.get_filter_expression

    @lru_cache(maxsize=_KEPT_EXPRESSIONS)
    def parsed(expression: str | None, names: str, values: str) -> Any:
        return parse(expression, json.loads(names), json.loads(values))

    def get_filter_expression(
        expression: str | None, names: dict[str, str] | None, values: dict[str, dict[str, str]] | None
    ) -> Any:
        try:
            key = json.dumps(names, sort_keys=True), json.dumps(values, sort_keys=True)
        except TypeError:  # values that are not JSON (an in-process caller's): parsed as moto does
            return parse(expression, names, values)
        return parsed(expression, *key)

    get_filter_expression._kept = True  # type: ignore[attr-defined]
    get_filter_expression.__wrapped__ = parse  # type: ignore[attr-defined]
    # moto's models import the function by name: each module's name is replaced.
    for module in (dynamodb_models, dynamodb_table):
        module.get_filter_expression = get_filter_expression  # type: ignore[assignment]
