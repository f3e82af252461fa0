"""Links: short codes, URLs, shortening and resolving, owners' management, expiry on the stage
cache, QR codes, and the links table (``store*``) with its indexes."""
