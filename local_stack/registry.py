"""Every emulated AWS service, registered in one place: what the stack starts, in order, and the
CloudFormation resource types each one provides.

Adding a service is a package of local_stack/ and one line in SERVICES (CONTRIBUTING.md has the
checklist). The stack (stack.py) iterates this list; nothing else names the services."""

from collections.abc import Callable

from local_stack.apigateway import resource_types as apigateway_types
from local_stack.apigateway.service import ApiGatewayService
from local_stack.athena import resource_types as athena_types
from local_stack.awslambda import resource_types as lambda_types
from local_stack.awslambda.service import LambdaService
from local_stack.cloudfront import resource_types as cloudfront_types
from local_stack.cloudwatch import resource_types as cloudwatch_types
from local_stack.cloudwatch.service import CloudWatchService
from local_stack.cognito import resource_types as cognito_types
from local_stack.cognito.service import CognitoService
from local_stack.dynamodb.service import DynamoDbService
from local_stack.events.service import EventsService
from local_stack.firehose import resource_types as firehose_types
from local_stack.glue import resource_types as glue_types
from local_stack.iam.service import IamService
from local_stack.resource_provider import ResourceProvider
from local_stack.s3 import resource_types as s3_types
from local_stack.s3.service import S3Service
from local_stack.service import Service
from local_stack.sns import resource_types as sns_types
from local_stack.sqs import resource_types as sqs_types
from local_stack.sqs.service import SqsService

# The services with a part in the stack's start and stop (local_stack/service.py), in the order of
# their hooks; stopped in reverse. The durable state's parts follow this order too (tables,
# queues, keys, objects, access log lines, asynchronous events: the data folder's). Lambda's
# runtime and API Gateway's REST API are the stack's own servers (stack.py; LambdaService keeps
# Lambda's event queue); SNS, KMS and CloudFormation start nothing (their types are below, or read
# by the services above).
SERVICES: tuple[Callable[[], Service], ...] = (
    DynamoDbService,
    SqsService,
    ApiGatewayService,
    S3Service,
    IamService,
    EventsService,
    CloudWatchService,
    LambdaService,
    CognitoService,
)

# One provider per CloudFormation type that moto's CloudFormation lacks: used by `make run`
# (cloudformation/resources.py) and by `sam deploy` against the embedded AWS (cloudformation/deploy.py).
RESOURCE_PROVIDERS: tuple[ResourceProvider, ...] = (
    cloudwatch_types.AlarmProvider(),
    cloudwatch_types.LogSubscriptionFilterProvider(),
    sns_types.SubscriptionProvider(),
    apigateway_types.StageProvider(),
    apigateway_types.AccountProvider(),
    apigateway_types.UsagePlanProvider(),
    apigateway_types.ApiKeyProvider(),
    apigateway_types.UsagePlanKeyProvider(),
    apigateway_types.WebAclProvider(),
    apigateway_types.WebAclAssociationProvider(),
    apigateway_types.HttpApiProvider(),
    apigateway_types.HttpIntegrationProvider(),
    apigateway_types.HttpRouteProvider(),
    apigateway_types.HttpStageProvider(),
    lambda_types.EventInvokeConfigProvider(),
    s3_types.BucketPolicyProvider(),
    sqs_types.QueuePolicyProvider(),
    cloudfront_types.DistributionProvider(),
    cloudfront_types.CachePolicyProvider(),
    cloudfront_types.OriginRequestPolicyProvider(),
    cloudfront_types.DeliverySourceProvider(),
    cloudfront_types.DeliveryDestinationProvider(),
    cloudfront_types.DeliveryProvider(),
    glue_types.DatabaseProvider(),
    glue_types.TableProvider(),
    firehose_types.DeliveryStreamProvider(),
    athena_types.WorkGroupProvider(),
    cognito_types.UserPoolProvider(),
    cognito_types.UserPoolClientProvider(),
    cognito_types.UserPoolDomainProvider(),
    cognito_types.UserPoolGroupProvider(),
    cognito_types.UserPoolIdentityProviderProvider(),
)
PROVIDERS_BY_TYPE: dict[str, ResourceProvider] = {provider.TYPE: provider for provider in RESOURCE_PROVIDERS}


def install_cloudformation() -> None:
    """Complete moto's CloudFormation in this process with the registered providers (idempotent)."""
    from local_stack.cloudformation import deploy

    deploy.install(RESOURCE_PROVIDERS)
