"""services.retrieve.adapters."""
