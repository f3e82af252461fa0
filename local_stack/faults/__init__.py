"""Fault injection for tests and demos (``--fault``), never deployed: its one home. ``injection``
parses the faults and installs the in-worker ones; the local Lambda runtime applies
duplicate-async and the access log's subscription filters duplicate-logs (see ``injection``).

Imports nothing of the stack: worker processes import it through the bootstrap."""

from local_stack.faults.injection import FAULT_KINDS, AsyncDuplicator, FaultError, Faults, parse_faults

__all__ = ["FAULT_KINDS", "AsyncDuplicator", "FaultError", "Faults", "parse_faults"]
