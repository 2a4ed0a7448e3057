"""services.sleep.logic."""
