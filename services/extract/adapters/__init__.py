"""services.extract.adapters."""
