"""AWS::S3::BucketPolicy, put in moto's S3 (buckets themselves are moto's own model, or buckets.py
for `make run`)."""

import json
from typing import Any

from local_stack.resource_provider import Created


class BucketPolicyProvider:
    TYPE, NAME_PROPERTY = "AWS::S3::BucketPolicy", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.s3.models import s3_backends

        bucket = str(properties["Bucket"])
        document = json.dumps(properties["PolicyDocument"]).encode()
        # S3 is global: moto keeps every bucket in its "aws" partition's backend.
        s3_backends[account_id]["aws"].put_bucket_policy(bucket, document)
        return Created(bucket, owner=bucket)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.s3.models import s3_backends

        s3_backends[account_id]["aws"].delete_bucket_policy(created.owner)
