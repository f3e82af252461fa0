"""A Lambda context object with the fields Powertools reads."""

from dataclasses import dataclass


@dataclass
class FakeLambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    remaining_millis: int = 29_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis
