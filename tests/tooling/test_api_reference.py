"""docs/api-reference.md is what the current OpenAPI document renders to."""

from stack_tools.api_reference import REFERENCE_PATH, api_document, render


def test_the_reference_page_is_up_to_date() -> None:
    # Given the document the API serves now
    expected = render(api_document())
    # Then the page in docs/ says the same (regenerate with `python -m stack_tools.api_reference`)
    assert REFERENCE_PATH.read_text(encoding="utf-8") == expected, (
        "docs/api-reference.md is out of date: run `.venv/bin/python -m stack_tools.api_reference`"
    )
