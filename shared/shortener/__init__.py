"""The shortener's domain package, deployed as the Lambda layer every function imports.

Layering: ``models`` (pydantic models and typed exceptions), ``logic`` (rules, no AWS),
``dal`` (the only modules that import boto3). ``settings`` and ``observability`` are read once per
container.
"""
