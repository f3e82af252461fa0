"""Benchmarks: scripts that print figures (never timed tests). Run with `make bench ARGS=<name>`."""
