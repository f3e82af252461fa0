"""A multipart upload completed with one copy of the object in memory, not three.

moto completes a multipart upload by appending every part to a bytearray, copying that into bytes,
and, for the default full-object checksum (CRC64NVME), appending every part a third time inside its
checksum builder, which copies it once more to compute; the object is then written to a file
(moto keeps a body over 5 MB on disk). A bulk job's results file (about 170 MB for 2,000,000 rows)
or a job's QR ZIP (650 MB for 1,000,000 rows) so held three to four times its size in the stack's
memory at the end of the job, when the embedded DynamoDB is at its largest. Here the parts are
appended once and the checksum computed over that copy. What moto answers is unchanged: the same
validation of the parts (InvalidPart, EntityTooSmall, MalformedXML), the same ETag, the same
checksum; tests/local_stack/s3/test_multipart.py compares them with moto's own."""

import codecs
from collections.abc import Iterator

from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML
from moto.s3.models import FakeMultipart, MultipartChecksumBuilder
from moto.s3.utils import compute_checksum
from moto.settings import S3_UPLOAD_PART_MIN_SIZE
from moto.utilities.utils import md5_hash

_MOTO_COMPLETE = FakeMultipart.complete  # moto's own, before install() (the tests compare them)


def complete(
    self: FakeMultipart, body: Iterator[tuple[int, str]]
) -> tuple[bytearray, str, tuple[str, str, int] | None]:
    """``FakeMultipart.complete``: the object, its multipart ETag and its checksum."""
    checksums = MultipartChecksumBuilder(
        self.metadata.get("x-amz-checksum-algorithm"), self.metadata.get("x-amz-checksum-type")
    )
    whole_object = checksums.checksum_type != "COMPOSITE"
    decode_hex = codecs.getdecoder("hex_codec")
    total, md5s = bytearray(), bytearray()
    last = None
    count = 0
    for number, etag in body:
        part = self.parts.get(number)
        if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
            raise InvalidPart()
        if last is not None and last.contentsize < S3_UPLOAD_PART_MIN_SIZE:
            raise EntityTooSmall()
        md5s.extend(decode_hex(part.etag.replace('"', ""))[0])  # type: ignore[arg-type]
        value = part.value
        total.extend(value)
        if not whole_object:
            checksums.addPart(value)
        last = part
        count += 1
    if count == 0:
        raise MalformedXML
    full_etag = md5_hash()
    full_etag.update(bytes(md5s))
    checksum: tuple[str, str, int] | None
    if whole_object:
        algorithm = checksums.checksum_algorithm
        checksum = (checksums.checksum_type, compute_checksum(total, algorithm).decode(), 1)  # type: ignore[arg-type]
    else:
        checksum = checksums.build()
    return total, f"{full_etag.hexdigest()}-{count}", checksum


def install() -> None:
    """Complete multipart uploads with one copy of the object; idempotent."""
    FakeMultipart.complete = complete  # type: ignore[assignment,method-assign]
