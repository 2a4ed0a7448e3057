"""services.ingest.adapters."""
