"""services.ingest.logic."""
