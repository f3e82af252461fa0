"""Access: API keys and the authorizer's rules, usage plans, the blocklist of hosts and takedown."""
