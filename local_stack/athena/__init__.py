"""Amazon Athena on the local stack: the click events' workgroup (moto's Athena)."""
