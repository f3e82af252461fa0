"""S3, locally: buckets made from the template, their event notifications delivered to the local
functions, and presigned URLs checked as S3 checks them (``buckets``); ``state``: S3State, the
objects' part of the durable state (bodies in files of their own); moto patches: ``multipart`` (one
copy of a completed upload), ``bucket_policies`` (the TLS condition), ``delete_refusals`` (a stack
whose bucket holds objects is not deleted)."""

from local_stack.s3.buckets import PresignedUrlGate, create_bucket, deliver_notifications
from local_stack.s3.state import S3State

__all__ = ["PresignedUrlGate", "S3State", "create_bucket", "deliver_notifications"]
