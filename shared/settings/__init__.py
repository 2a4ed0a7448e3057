"""shared.settings."""
