"""The sleep service."""
