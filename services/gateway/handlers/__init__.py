"""HTTP endpoints of the gateway: REST routes, the chat proxy, MCP tools, probes."""
