"""The composition root: what each Lambda function's handler calls, built from the function's
settings by lru_cached builders, once per container (nothing is built at import).

One module per function: ``api``, ``authorizer``, ``collector``, ``poller``, ``restarter``,
``scaler``, ``worker`` (the jobs worker); what several share in ``links`` (a LinkService and its
guards) and ``loops`` (the LoopScaler, built there only); ``keys``, the key manager of a stack from
its outputs, for the tools that manage keys (the command-line client, the local stack's admin key).
This package imports none of them, so a function imports (and cold-starts) only its own."""
