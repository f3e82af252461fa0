"""The jobs table, by concern (moved from dal/jobs.py; split in the next commits)."""

from shortener.dal.jobs.chunk_records import (
    COUNTED_SET_COMPACT_AT,
    JOB_SK,
    JobsStore,
    decode_id_ranges,
    decode_outcomes,
    encode_id_ranges,
    encode_outcomes,
)

__all__ = [
    "COUNTED_SET_COMPACT_AT",
    "JOB_SK",
    "JobsStore",
    "decode_id_ranges",
    "decode_outcomes",
    "encode_id_ranges",
    "encode_outcomes",
]
