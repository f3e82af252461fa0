"""Lambda, locally: the functions' execution environments and the Lambda API in front of them.

- ``runtime``: LambdaRuntime and RuntimeSettings, one worker process per execution environment,
  concurrency, timeouts, asynchronous retries (FunctionThrottledError, Invocation).
- ``endpoint``: LambdaEndpoint, the Lambda API (Invoke) and the SNS subscriptions' HTTP endpoint.
- ``bootstrap``: the worker's side, run as `python -m local_stack.awslambda.bootstrap`; it installs
  the fault injection of ``local_stack.faults``.
- ``quota``: the account's concurrency quota in moto's Lambda (GetAccountSettings; a moto patch).
- ``zygote``: the process that preloads the functions' libraries and forks each worker (Linux);
  ``forking``: the runtime's side of it (Zygote, ForkedProcess).
- ``log_format``: the functions' output rendered for the terminal (LogFormat, configure_logging).
- ``event_queue``: Lambda's queue of asynchronous events as part of the durable state
  (AsyncEventQueue); ``sqs_sources``: the SQS event source mappings' pollers (SqsPollers);
  ``service``: LambdaService, which adds both to the stack.

This package imports none of them: every worker process imports ``bootstrap`` through it, and must
not load the stack (moto, the gateway) to run one function. Import the modules themselves."""
