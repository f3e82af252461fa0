"""KMS, locally: the template's keys and aliases and their key policies (``keys``)."""

from local_stack.kms.keys import PUBLISH_ACTIONS, KeyRing

__all__ = ["PUBLISH_ACTIONS", "KeyRing"]
