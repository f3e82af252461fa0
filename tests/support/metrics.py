"""The metrics a function printed (Powertools' Embedded Metric Format lines)."""

import json


def emitted(output: str) -> dict[str, tuple[float, list[list[str]]]]:
    """Metric name -> (value, dimension sets), from the Embedded Metric Format lines Powertools printed."""
    values: dict[str, tuple[float, list[list[str]]]] = {}
    for line in output.splitlines():
        if '"_aws"' not in line:
            continue
        record = json.loads(line)
        for directive in record["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = record[metric["Name"]]
                values[metric["Name"]] = (
                    value[0] if isinstance(value, list) else value,
                    directive["Dimensions"],
                )
    return values
