"""Cognito user pools, locally: moto's cognito-idp with the pool, client, domain, groups and
provider of the template, tokens signed with a key of the data folder's own, the people kept in the
durable state, and the hosted sign-in's endpoints on a loopback port of their own (hosted_ui.py)."""
