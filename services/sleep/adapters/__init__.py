"""services.sleep.adapters."""
