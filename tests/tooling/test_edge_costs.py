"""The edge benchmark's pricing arithmetic (benchmarks/edge.py): no stack, list prices only."""

import pytest

from benchmarks.edge import (
    CLICK_PIPELINE,
    ORIGIN_PRICES,
    PRICES,
    cost_row,
    cost_table,
    log_price,
    origin_kind,
    origin_price,
)
from local_stack.cloudformation.template import load_template


def test_the_90_percent_row_sums_its_parts() -> None:
    # Given 10% of redirects reaching the REST origin and 400-byte log records
    row = cost_row(0.9, 0.1, "rest", 400)

    # Then each part is priced from the one price list, and the total is their sum
    assert row.edge == pytest.approx(1.00)
    assert row.origin == pytest.approx(0.1 * (3.50 + 0.29 + 0.60))
    assert row.logs == pytest.approx(0.20)
    assert row.total == pytest.approx(row.edge + row.origin + row.logs)
    assert row.total == pytest.approx(1.639)  # 0.9 x $1.00 + 0.1 x $5.39 + $0.20


def test_a_counted_origin_fraction_replaces_the_ratio_in_its_row_only() -> None:
    # Given 0.12 of redirects counted at the origin at 90% hits
    rows = cost_table("rest", 400, {0.9: 0.12})

    # Then the 90% row uses the count and the others 1 - their ratio
    assert [row.origin_fraction for row in rows] == pytest.approx([1.0, 0.5, 0.12, 0.01])


def test_an_http_api_origin_costs_less_than_a_rest_one() -> None:
    assert origin_price("http-api") == pytest.approx(1.29)
    assert origin_price("rest") == pytest.approx(4.39)


def test_log_delivery_is_priced_per_decimal_gigabyte() -> None:
    assert log_price(1000) == pytest.approx(PRICES["vended_log_gb"].dollars)


def test_every_price_names_its_aws_pricing_page() -> None:
    prices = [*PRICES.values(), *CLICK_PIPELINE.values()]
    prices += [price for kind in ORIGIN_PRICES.values() for price in kind.values()]
    assert all(price.url.startswith("https://aws.amazon.com/") for price in prices)


def test_the_template_origin_kind_is_known() -> None:
    assert origin_kind(load_template()) in ORIGIN_PRICES


def test_an_http_api_origin_is_told_from_a_rest_one() -> None:
    # Given a distribution whose origin is an HTTP API answering at its root
    template = {
        "Resources": {
            "Origin": {"Type": "AWS::ApiGatewayV2::Api"},
            "Edge": {
                "Type": "AWS::CloudFront::Distribution",
                "Properties": {
                    "DistributionConfig": {
                        "DefaultCacheBehavior": {"TargetOriginId": "api"},
                        "Origins": [{"Id": "api", "DomainName": {"Fn::Sub": "${Origin}.execute-api.x"}}],
                    }
                },
            },
        }
    }

    # Then its kind is http-api
    assert origin_kind(template) == "http-api"
