"""Condition and filter expressions that DynamoDB refuses are refused as DynamoDB does: a
``ValidationException`` (400), not a server error.

moto's expression parser raises a bare ``KeyError`` for a name or value the request does not
define (``#n``, ``:v``) and ``ValueError`` for text it cannot parse. In server mode either one
becomes a 500, which boto3 retries as a server fault, and which code under test cannot tell from
an outage; DynamoDB answers all of them ``ValidationException`` ("An expression attribute value
used in expression is not defined; attribute value: :v", "Syntax error; ..."), never retried
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html)."""

from typing import Any

from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.exceptions import MockValidationException


def _refusal(error: Exception) -> MockValidationException:
    if isinstance(error, KeyError):
        name = str(error.args[0]) if error.args else ""
        if name.startswith("#"):
            return MockValidationException(
                "Invalid expression: An expression attribute name used in the document path is not "
                f"defined; attribute name: {name}"
            )
        return MockValidationException(
            "Invalid expression: An expression attribute value used in expression is not defined; "
            f"attribute value: {name}"
        )
    return MockValidationException(f"Invalid expression: Syntax error; {error}")


def install() -> None:
    """Answer an undefined name or value, or unparseable text, in a condition or filter
    expression with ValidationException; idempotent."""
    parse = ConditionExpressionParser.parse
    if getattr(parse, "_validates", False):
        return

    def validating_parse(self: ConditionExpressionParser) -> Any:
        try:
            return parse(self)
        except (KeyError, ValueError) as error:
            raise _refusal(error) from error

    validating_parse._validates = True  # type: ignore[attr-defined]
    validating_parse.__wrapped__ = parse  # type: ignore[attr-defined]
    ConditionExpressionParser.parse = validating_parse  # type: ignore[method-assign]
