"""S3, locally: buckets made from the template, their event notifications delivered to the local
functions, and presigned URLs checked as S3 checks them (``buckets``)."""

from local_stack.s3.buckets import PresignedUrlGate, create_bucket, deliver_notifications

__all__ = ["PresignedUrlGate", "create_bucket", "deliver_notifications"]
