"""What a job's work cost, in dollars, from its counted usage and a price table.

The prices are AWS's public list prices for us-east-1, as published on 2025-06-01 (on-demand
DynamoDB after its November 2024 price cut, SQS standard queues, Lambda on arm64, S3 Standard),
without free tiers. Another region or a later price change: edit ``US_EAST_1``.

Checked again in November 2026 against what is published about these prices (on-demand DynamoDB
$0.625 / $0.125 per million write / read request units, SQS standard $0.40 per million requests
in its first tier, Lambda arm64 $0.20 per million requests and $0.0000133334 per GB-second in its
first tier, S3 Standard $0.005 per 1,000 PUT/COPY/POST/LIST and $0.0004 per 1,000 GET): unchanged,
so the table and its date stand."""

from dataclasses import dataclass

from shortener.jobs.model import JobUsage
from shortener.jobs.view_model import CostLine


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Dollars per unit of each counted thing."""

    region: str
    as_of: str
    dynamodb_write_unit: float
    dynamodb_read_unit: float
    sqs_request: float
    lambda_request: float
    lambda_gb_second: float
    s3_write_request: float
    s3_read_request: float

    def describe(self) -> str:
        return f"AWS list prices, {self.region}, as of {self.as_of}, no free tier"


US_EAST_1 = PriceTable(
    region="us-east-1",
    as_of="2025-06-01",
    dynamodb_write_unit=0.625 / 1e6,
    dynamodb_read_unit=0.125 / 1e6,
    sqs_request=0.40 / 1e6,
    lambda_request=0.20 / 1e6,
    lambda_gb_second=0.0000133334,
    s3_write_request=0.005 / 1e3,
    s3_read_request=0.0004 / 1e3,
)


def cost_line(usage: JobUsage, prices: PriceTable = US_EAST_1) -> CostLine:
    """The job's counted requests and units, and their price."""
    dollars = (
        usage.write_units * prices.dynamodb_write_unit
        + usage.read_units * prices.dynamodb_read_unit
        + usage.sqs_requests * prices.sqs_request
        + usage.lambda_requests * prices.lambda_request
        + usage.lambda_gb_seconds * prices.lambda_gb_second
        + usage.s3_write_requests * prices.s3_write_request
        + usage.s3_read_requests * prices.s3_read_request
    )
    return CostLine(
        requests={
            "dynamodb": usage.dynamodb_requests,
            "sqs": usage.sqs_requests,
            "lambda": usage.lambda_requests,
            "s3": usage.s3_write_requests + usage.s3_read_requests,
        },
        write_units=round(usage.write_units, 3),
        read_units=round(usage.read_units, 3),
        lambda_gb_seconds=round(usage.lambda_gb_seconds, 3),
        usd=round(dollars, 6),
        prices=prices.describe(),
    )
