"""Amazon Data Firehose on the local stack: moto's delivery streams, delivering to the embedded S3
as AWS's record format conversion and prefixes would (local_stack/firehose/delivery.py)."""
