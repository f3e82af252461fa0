"""A multipart upload completes with moto's own answers and one copy of the object in memory."""

import gc
import os
import tracemalloc
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML
from moto.s3.models import FakeMultipart, s3_backends

from local_stack.s3 import multipart as s3_multipart

MIB = 1024 * 1024


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="bucket")
        yield client


def _upload(s3: Any, parts: list[bytes], **checksum: str) -> tuple[FakeMultipart, list[tuple[int, str]]]:
    upload = s3.create_multipart_upload(Bucket="bucket", Key="k", **checksum)["UploadId"]
    etags = [
        (
            number,
            s3.upload_part(Bucket="bucket", Key="k", UploadId=upload, PartNumber=number, Body=body)["ETag"],
        )
        for number, body in enumerate(parts, start=1)
    ]
    return s3_backends["123456789012"]["aws"].buckets["bucket"].multiparts[upload], etags


@pytest.mark.parametrize(
    "checksum",
    [{}, {"ChecksumAlgorithm": "SHA256"}, {"ChecksumAlgorithm": "CRC32", "ChecksumType": "FULL_OBJECT"}],
    ids=["default", "composite", "full-object"],
)
def test_the_object_its_etag_and_its_checksum_are_motos_own(s3: Any, checksum: dict[str, str]) -> None:
    multipart, etags = _upload(s3, [os.urandom(5 * MIB), os.urandom(5 * MIB), b"last"], **checksum)
    ours = s3_multipart.complete(multipart, iter(etags))
    theirs = s3_multipart._MOTO_COMPLETE(multipart, iter(etags))
    assert (bytes(ours[0]), ours[1], ours[2]) == theirs


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda etags: [(etags[0][0], '"0000"'), *etags[1:]], InvalidPart),
        (lambda etags: [(9, etags[0][1])], InvalidPart),
        (lambda etags: [], MalformedXML),
    ],
    ids=["wrong etag", "unknown part", "no part"],
)
def test_a_wrong_part_list_is_refused_as_moto_refuses_it(
    s3: Any, change: Any, error: type[Exception]
) -> None:
    multipart, etags = _upload(s3, [os.urandom(5 * MIB), b"last"])
    with pytest.raises(error):
        s3_multipart.complete(multipart, iter(change(etags)))
    with pytest.raises(error):
        s3_multipart._MOTO_COMPLETE(multipart, iter(change(etags)))


def test_a_small_part_before_the_last_is_refused(s3: Any) -> None:
    multipart, etags = _upload(s3, [b"small", b"last"])
    with pytest.raises(EntityTooSmall):
        s3_multipart.complete(multipart, iter(etags))


def _peak_while(complete: Any, multipart: FakeMultipart, etags: list[tuple[int, str]]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        result = complete(multipart, iter(etags))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak


def test_completing_holds_the_object_about_once_where_moto_held_it_three_times(s3: Any) -> None:
    size = 30 * MIB
    multipart, etags = _upload(s3, [os.urandom(6 * MIB) for _ in range(5)])
    ours = _peak_while(s3_multipart.complete, multipart, etags)
    theirs = _peak_while(s3_multipart._MOTO_COMPLETE, multipart, etags)
    assert ours < 1.5 * size
    assert theirs > 2.5 * size


def test_the_embedded_aws_completes_with_it(s3: Any) -> None:
    # Installed for every moto in this process (tests/conftest.py), as in the embedded AWS
    assert FakeMultipart.complete is s3_multipart.complete
    multipart, etags = _upload(s3, [os.urandom(5 * MIB), b"last"])
    s3.complete_multipart_upload(
        Bucket="bucket",
        Key="k",
        UploadId=multipart.id,
        MultipartUpload={"Parts": [{"PartNumber": number, "ETag": etag} for number, etag in etags]},
    )
    assert s3.get_object(Bucket="bucket", Key="k")["Body"].read()[-4:] == b"last"
