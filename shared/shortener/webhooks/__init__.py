"""Webhooks (docs/webhooks.md): owners' endpoints told of their links' changes, clicks, jobs and
batches by signed deliveries, retried for more than a day, each attempt recorded.

``model`` the views and requests, ``signing`` the signature, ``destinations`` which addresses a
delivery may reach, ``store`` the webhooks table, ``endpoints`` the owner's routes' rules,
``announce`` putting events on the bus, ``sender`` the deliveries (the webhooks function)."""
