"""The gateway service: HTTP (REST ``/v1`` + OpenAPI, the OpenAI-compatible memory proxy, MCP) in front of NATS."""
