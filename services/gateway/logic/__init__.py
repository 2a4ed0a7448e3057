"""Pure logic of the gateway (no I/O): authorisation, problem documents, OpenAPI, chat shaping."""
