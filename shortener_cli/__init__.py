"""`shortener`: the command-line client of the URL shortener's HTTP API (any deployment)."""
