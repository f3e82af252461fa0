"""The bulk bucket: presigned uploads and downloads, reading an uploaded file as a stream from a
byte offset, and writing a results file of any size (multipart) without holding it in memory."""

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shortener import aws, clock
from shortener.exceptions import MultipartUploadGoneError
from shortener.jobs.view_model import PresignedUpload

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# Blocks handed to the reader: large enough that per-block overhead vanishes, small for memory.
READ_BLOCK_BYTES = 1024 * 1024
# S3's smallest part (except the last) is 5 MiB; a file smaller than one part is one PutObject.
MIN_PART_BYTES = 5 * 1024 * 1024


class FileChangedError(Exception):
    """The object is gone or no longer the one read before (a different ETag)."""


class BulkFiles:
    """Data access for the bulk bucket. The client is created lazily unless one is passed."""

    def __init__(self, client: "S3Client | None" = None) -> None:
        self._client = client

    @property
    def client(self) -> "S3Client":
        return self._client or aws.s3()

    def upload_url(self, bucket: str, key: str, size: int, expires_in: int) -> PresignedUpload:
        """A presigned PUT for exactly ``size`` bytes: Content-Length is a signed header, so S3
        refuses any other size (SignatureDoesNotMatch), and the URL works until it expires."""
        url = self.client.generate_presigned_url(
            "put_object",
            Params={"Bucket": bucket, "Key": key, "ContentLength": size},
            ExpiresIn=expires_in,
        )
        return PresignedUpload(url=url, headers={"Content-Length": str(size)}, expires_at=_after(expires_in))

    def download_url(
        self,
        bucket: str,
        key: str,
        file_name: str,
        expires_in: int,
        *,
        content_type: str = "text/csv; charset=utf-8",
    ) -> tuple[str, datetime]:
        """A presigned GET of a file (a results CSV unless ``content_type`` says otherwise) that a
        browser saves as ``file_name``, and when it expires."""
        url = self.client.generate_presigned_url(
            "get_object",
            Params={
                "Bucket": bucket,
                "Key": key,
                "ResponseContentDisposition": f'attachment; filename="{file_name}"',
                "ResponseContentType": content_type,
            },
            ExpiresIn=expires_in,
        )
        return url, _after(expires_in)

    def uploaded_etag(self, bucket: str, key: str) -> str | None:
        """The ETag (unquoted, as S3's events give it) of the object at ``key``, or None when
        there is none (HeadObject: 404, or 403 without s3:ListBucket)."""
        try:
            response = self.client.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in ("404", "NoSuchKey", "403"):
                return None
            raise
        return str(response["ETag"]).strip('"')

    def read(self, bucket: str, key: str, *, offset: int, etag: str) -> Iterator[bytes]:
        """The object's bytes from ``offset`` on, in blocks, as they arrive (one GetObject with a
        Range, only while the object still has ``etag``: FileChangedError otherwise)."""
        arguments: dict[str, Any] = {"Bucket": bucket, "Key": key, "IfMatch": f'"{etag.strip(chr(34))}"'}
        if offset:
            arguments["Range"] = f"bytes={offset}-"
        try:
            response = self.client.get_object(**arguments)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code == "InvalidRange":  # the offset is the end of the file: nothing left
                return iter(())
            if code in ("PreconditionFailed", "NoSuchKey", "412", "404"):
                raise FileChangedError(f"s3://{bucket}/{key} is gone or was replaced ({code})") from exc
            raise
        return response["Body"].iter_chunks(READ_BLOCK_BYTES)

    def modified_at(self, bucket: str, key: str) -> datetime | None:
        """When the object at ``key`` was last written; None when there is none (HeadObject: 404,
        or 403 without s3:ListBucket, which S3 answers for a missing key: see
        https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html, Permissions)."""
        try:
            head = self.client.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound", "403"):
                return None
            raise
        return head["LastModified"]

    def write(
        self, bucket: str, key: str, blocks: Iterable[bytes], *, content_type: str, file_name: str
    ) -> int:
        """Write ``blocks`` as one object (a multipart upload once they pass one part); the bytes
        written. A failed multipart upload is aborted, so no parts are left behind."""
        disposition = f'attachment; filename="{file_name}"'
        iterator = iter(blocks)
        buffered = b""
        for block in iterator:
            buffered += block
            if len(buffered) >= MIN_PART_BYTES:
                break
        else:
            self.client.put_object(
                Bucket=bucket,
                Key=key,
                Body=buffered,
                ContentType=content_type,
                ContentDisposition=disposition,
            )
            return len(buffered)
        upload_id = self.client.create_multipart_upload(
            Bucket=bucket, Key=key, ContentType=content_type, ContentDisposition=disposition
        )["UploadId"]
        try:
            parts: list[Any] = []
            size = 0
            for part in _parts(buffered, iterator):
                answer = self.client.upload_part(
                    Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=len(parts) + 1, Body=part
                )
                parts.append({"PartNumber": len(parts) + 1, "ETag": answer["ETag"]})
                size += len(part)
            self.client.complete_multipart_upload(
                Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except BaseException:
            self.client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
            raise
        return size

    # ---- a multipart upload written across invocations (a job's labels ZIP) -------------------

    def start_upload(self, bucket: str, key: str, *, content_type: str, file_name: str) -> str:
        """A new multipart upload of ``key``: its upload id."""
        return self.client.create_multipart_upload(
            Bucket=bucket,
            Key=key,
            ContentType=content_type,
            ContentDisposition=f'attachment; filename="{file_name}"',
        )["UploadId"]

    def upload_part(self, bucket: str, key: str, upload_id: str, number: int, body: bytes) -> None:
        """Part ``number`` of the upload (a part sent again replaces the one sent before)."""
        try:
            self.client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body)
        except ClientError as exc:
            raise _gone_or(exc, upload_id) from exc

    def complete_upload(self, bucket: str, key: str, upload_id: str, parts: int) -> None:
        """Make the object of parts 1..``parts`` (their ETags as S3 lists them: ListParts, so a
        build need not keep them; parts past ``parts`` left by a builder that died are not used)."""
        listed: list[Any] = []
        try:
            for page in self.client.get_paginator("list_parts").paginate(
                Bucket=bucket, Key=key, UploadId=upload_id
            ):
                listed += [
                    {"PartNumber": part["PartNumber"], "ETag": part["ETag"]}
                    for part in page.get("Parts", [])
                    if part["PartNumber"] <= parts
                ]
            self.client.complete_multipart_upload(
                Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": listed}
            )
        except ClientError as exc:
            raise _gone_or(exc, upload_id) from exc

    def abort_upload(self, bucket: str, key: str, upload_id: str) -> None:
        """Abort the upload and free its parts (one already gone is fine)."""
        try:
            self.client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        except ClientError as exc:
            if aws.error_code(exc) not in ("NoSuchUpload", "404"):
                raise

    def read_all(self, bucket: str, key: str) -> Iterator[bytes]:
        """A whole object's bytes, in blocks as they arrive."""
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(READ_BLOCK_BYTES)

    def put(self, bucket: str, key: str, body: bytes) -> None:
        """A small object (a build's saved bytes)."""
        self.client.put_object(Bucket=bucket, Key=key, Body=body)

    def delete(self, bucket: str, keys: list[str]) -> None:
        """Delete objects (missing ones are fine); one DeleteObject each, as the function's policy
        grants s3:DeleteObject on its prefix."""
        for key in keys:
            self.client.delete_object(Bucket=bucket, Key=key)


def _parts(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    """Parts of at least MIN_PART_BYTES (the last may be smaller)."""
    pending = first
    for block in rest:
        pending += block
        if len(pending) >= MIN_PART_BYTES:
            yield pending
            pending = b""
    if pending:
        yield pending


def _gone_or(exc: ClientError, upload_id: str) -> Exception:
    if aws.error_code(exc) in ("NoSuchUpload", "404"):
        return MultipartUploadGoneError(f"multipart upload {upload_id} is gone")
    return exc


def _after(seconds: int) -> datetime:
    return clock.now() + timedelta(seconds=seconds)
