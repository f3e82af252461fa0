"""Clicks: counting the access log's redirects into hourly counters, click limits on a cached stage,
and the clicks table."""
