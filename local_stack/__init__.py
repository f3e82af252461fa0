"""The local stack: the whole system on one machine, on loopback, with no AWS account and no Docker."""
