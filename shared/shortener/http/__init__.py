"""What the API's routes share: web helpers, the error body and query models, opaque cursors, the
OpenAPI document and security headers."""
