"""AWS::Lambda::EventInvokeConfig, put in moto's Lambda (destinations.py reads the template's)."""

from typing import Any

from local_stack.resource_provider import Created


class EventInvokeConfigProvider:
    TYPE, NAME_PROPERTY = "AWS::Lambda::EventInvokeConfig", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.awslambda.models import lambda_backends

        config = {key: value for key, value in properties.items() if key not in ("FunctionName", "Qualifier")}
        # Integer properties (a Ref to a Number parameter is a string here; CloudFormation converts it
        # to the property's type).
        for key in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds"):
            if key in config:
                config[key] = int(config[key])
        function = properties["FunctionName"]
        lambda_backends[account_id][region].put_function_event_invoke_config(function, config)
        return Created(name, owner=function)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.awslambda.models import lambda_backends

        lambda_backends[account_id][region].delete_function_event_invoke_config(created.owner)
