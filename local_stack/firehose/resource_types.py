"""AWS::KinesisFirehose::DeliveryStream, created in moto's Firehose (moto's CloudFormation has no
model for it); its Ref is its name, its ``Arn`` the stream's ARN."""

from typing import Any

from local_stack.resource_provider import Created


class DeliveryStreamProvider:
    TYPE, NAME_PROPERTY = "AWS::KinesisFirehose::DeliveryStream", "DeliveryStreamName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.firehose.models import firehose_backends

        stream = str(properties.get("DeliveryStreamName") or name)
        firehose_backends[account_id][region].create_delivery_stream(
            region,
            stream,
            str(properties.get("DeliveryStreamType") or "DirectPut"),
            kinesis_stream_source_configuration={},
            delivery_stream_encryption_configuration_input=properties.get(
                "DeliveryStreamEncryptionConfigurationInput"
            )
            or {},
            s3_destination_configuration=properties.get("S3DestinationConfiguration") or {},
            extended_s3_destination_configuration=properties.get("ExtendedS3DestinationConfiguration") or {},
            redshift_destination_configuration={},
            elasticsearch_destination_configuration={},
            splunk_destination_configuration={},
            http_endpoint_destination_configuration={},
            snowflake_destination_configuration={},
            iceberg_destination_configuration={},
            tags=list(properties.get("Tags") or []),
        )
        return Created(stream, {"Arn": f"arn:aws:firehose:{region}:{account_id}:deliverystream/{stream}"})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.firehose.models import firehose_backends

        firehose_backends[account_id][region].delivery_streams.pop(created.physical_id, None)
