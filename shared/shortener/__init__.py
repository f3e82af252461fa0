"""The shortener's domain package, deployed as the Lambda layer every function imports.

One package per concept, each holding its model, its logic, its ports and its adapters side by
side: ``links`` (codes, URLs, the links table, listing, changes, expiry, hosts, QR codes),
``jobs`` (bulk submission, the CSV reader, splitting, processing, outcomes, results, labels, click
reports, the jobs table), ``clicks`` (counting and click limits), ``loops`` (poller, pacing,
healing, scaling, tokens, the queue), ``access`` (keys, the authorizer's rules, blocklist,
takedown), ``audit`` (the audit log of changes), ``webhooks`` (owners' endpoints, signed
deliveries and their retries), ``http`` (web helpers, the API's shared query
models, OpenAPI, security headers).

Inside a package the layer shows in the file name: ``model.py`` / ``*_model.py`` (pydantic models),
adapters named for what they talk to (``store*`` DynamoDB, ``bucket`` S3, ``queue*`` SQS,
``events_bus`` EventBridge and SNS, ``invoke`` Lambda, ``stage_cache`` and ``usage_plans`` API
Gateway: the only modules that import boto3), and everything else logic, which speaks to typed
ports (``Protocol``s) that the adapters satisfy. ``services`` is the one composition root (one
module per function, built once per container); handlers never import an adapter.

The shared vocabulary stays at the top: ``exceptions`` (typed domain errors), ``clock`` (every read
of "now"), ``observability``, ``settings`` (read once per container), ``request_model`` (the
strict base of every request body: an unknown field is a 422 naming it), and the AWS client base
``aws`` with its request serializer ``aws_serializer`` and request counter ``aws_usage``.
"""
