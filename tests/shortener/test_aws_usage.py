"""The write units a job's cost line counts for DynamoDB requests, index writes included."""

from shortener.aws_usage import write_units

LINK = {"code": {"S": "hFO0"}, "url": {"S": "https://example.com/"}}
OWNED_LINK = {**LINK, "list_pk": {"S": "team-a#3"}, "list_sk": {"S": "2026-11-23T05:00:00Z#hFO0"}}


def test_a_link_without_an_owner_is_one_write_and_an_owned_one_also_writes_its_index() -> None:
    # Given two small links, one of them carrying the ByOwner index's keys
    # When they are put alone and in a batch
    # Then the owned one costs its unit again (the index's write, projection ALL)
    assert write_units("PutItem", {"Item": LINK}) == 1
    assert write_units("PutItem", {"Item": OWNED_LINK}) == 2
    batch = {
        "RequestItems": {"links": [{"PutRequest": {"Item": LINK}}, {"PutRequest": {"Item": OWNED_LINK}}]}
    }
    assert write_units("BatchWriteItem", batch) == 3


def test_an_indexed_put_in_a_transaction_costs_twice_its_table_and_index_writes() -> None:
    request = {"TransactItems": [{"Put": {"TableName": "links", "Item": OWNED_LINK}}]}
    assert write_units("TransactWriteItems", request) == 4


def test_a_job_item_with_an_owner_goes_into_the_jobs_index() -> None:
    job = {"job_id": {"S": "j"}, "owner": {"S": "team-a"}, "created_at": {"S": "2026-11-23T05:00:00Z"}}
    assert write_units("PutItem", {"Item": job}) == 2


def test_the_tables_own_units_leave_the_index_writes_out_when_asked() -> None:
    assert write_units("PutItem", {"Item": OWNED_LINK}, indexes=False) == 1
