"""DynamoDB, locally: moto's tables with what the local stack adds to them.

- ``state``: DynamoDbState, the tables' part of the durable state (every item write journaled).
- ``capacity``: DynamoDB's on-demand capacity as AWS documents it (CapacitySettings, the model);
  ``throttling``: the middleware inside the embedded AWS's lock that charges and throttles by it.
- ``index``: a sorted index per partition for Query on a secondary index (a moto patch).
- ``compact``: moto's items and values held with slots and shared names (moto patches)."""

from local_stack.dynamodb.capacity import CapacitySettings
from local_stack.dynamodb.state import DynamoDbState

__all__ = ["CapacitySettings", "DynamoDbState"]
