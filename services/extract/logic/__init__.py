"""services.extract.logic."""
