"""services.ingest.handlers."""
