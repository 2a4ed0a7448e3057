"""The embed service."""
