"""Deleting what AWS refuses to delete, refused locally too.

S3 refuses to delete a bucket that holds objects (DeleteBucket answers 409 BucketNotEmpty: "all
objects (including all object versions and delete markers) in the bucket must be deleted before
the bucket itself can be deleted", Amazon S3 API Reference, DeleteBucket). CloudFormation's
DeleteStack then fails on that bucket: the other resources are deleted, the stack ends
DELETE_FAILED with the reason, and a later DeleteStack tries the rest again (AWS CloudFormation
User Guide, "Troubleshooting CloudFormation": "Delete stack fails", "the S3 bucket must be empty").

moto's S3 API refuses already, but its CloudFormation deletes a stack whose bucket holds objects
silently (the bucket stays, unseen, and the stack is DELETE_COMPLETE). Here the bucket's deletion
raises BucketNotEmpty, and the stack ends DELETE_FAILED, listed, with a stack event saying why."""

from typing import Any

from moto.cloudformation.models import CloudFormationBackend, Stack
from moto.s3.exceptions import BucketNotEmpty
from moto.s3.models import FakeBucket, s3_backends
from moto.utilities.utils import get_partition

DELETE_FAILED = "DELETE_FAILED"


class _StackDeleteFailedError(Exception):
    def __init__(self, stack: Stack) -> None:
        super().__init__(stack.name)
        self.stack = stack


def install() -> None:
    """Patch moto's classes (idempotent)."""
    if getattr(Stack.delete, "_refuses_non_empty_buckets", False):
        return
    FakeBucket.delete_from_cloudformation_json = classmethod(_delete_bucket_if_empty)  # type: ignore[method-assign,assignment]
    _delete_stack._refuses_non_empty_buckets = True  # type: ignore[attr-defined]
    Stack.delete = _delete_stack  # type: ignore[method-assign]
    original = CloudFormationBackend.delete_stack

    def delete_stack(self: CloudFormationBackend, name_or_stack_id: str) -> None:
        try:
            original(self, name_or_stack_id)
        except _StackDeleteFailedError as failed:
            # Still listed, as on AWS, until a later DeleteStack succeeds.
            self.stacks[failed.stack.stack_id] = failed.stack

    CloudFormationBackend.delete_stack = delete_stack  # type: ignore[method-assign]


def _delete_bucket_if_empty(
    cls: type[FakeBucket], resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
) -> None:
    backend = s3_backends[account_id][get_partition(region_name)]
    bucket = backend.buckets.get(resource_name)
    if bucket is None:
        return
    if bucket.keys:
        raise BucketNotEmpty(resource_name)
    backend.delete_bucket(resource_name)


def _delete_stack(self: Stack) -> None:
    self._add_stack_event("DELETE_IN_PROGRESS", resource_status_reason="User Initiated")
    try:
        self.resource_map.delete()
    except BucketNotEmpty as exc:
        reason = (
            f"The following resource(s) failed to delete: [{_logical_id(self, exc.bucket_name)}]. "
            f"The bucket you tried to delete is not empty ({exc.bucket_name})."
        )
        self._add_stack_event(DELETE_FAILED, resource_status_reason=reason)
        self.status = DELETE_FAILED
        raise _StackDeleteFailedError(self) from exc
    self._add_stack_event("DELETE_COMPLETE")
    self.status = "DELETE_COMPLETE"


def _logical_id(stack: Stack, physical_id: str) -> str:
    for logical_id, resource in stack.resource_map._parsed_resources.items():
        if getattr(resource, "physical_resource_id", None) == physical_id:
            return str(logical_id)
    return physical_id
