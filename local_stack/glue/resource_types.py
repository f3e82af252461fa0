"""AWS::Glue::Database and AWS::Glue::Table, created in moto's Glue (moto's CloudFormation has no
model for them). Each one's Ref is its name, as CloudFormation's is."""

from typing import Any

from local_stack.resource_provider import Created


class DatabaseProvider:
    TYPE, NAME_PROPERTY = "AWS::Glue::Database", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.glue.models import glue_backends

        database_input = dict(properties.get("DatabaseInput") or {})
        # Glue keeps names in lower case.
        database = str(database_input.get("Name") or name).lower()
        database_input["Name"] = database
        glue_backends[account_id][region].create_database(database, database_input)
        return Created(database)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.glue.models import glue_backends

        glue_backends[account_id][region].databases.pop(created.physical_id, None)


class TableProvider:
    TYPE, NAME_PROPERTY = "AWS::Glue::Table", ""

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.glue.models import glue_backends

        table_input = dict(properties["TableInput"])
        database = str(properties["DatabaseName"]).lower()
        table = str(table_input.get("Name") or name).lower()
        table_input["Name"] = table
        glue_backends[account_id][region].create_table(database, table, table_input)
        return Created(table, owner=database)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.glue.models import glue_backends

        database = glue_backends[account_id][region].databases.get(created.owner)
        if database is not None:
            database.tables.pop(created.physical_id, None)
