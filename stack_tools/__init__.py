"""Tools for a deployed stack (never deployed themselves): what samconfig.toml says, a stack's
outputs, and what a deletion keeps. `make deploy`, `make delete` and `make acceptance` use them."""
