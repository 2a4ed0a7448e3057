"""services.retrieve.logic."""
