"""AWS Glue's Data Catalog on the local stack: the click events' database and table (moto's Glue),
whose schema the delivery stream converts to."""
