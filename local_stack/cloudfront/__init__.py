"""CloudFront, emulated: the edge in front of the local API (docs/edge.md)."""
