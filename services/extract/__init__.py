"""The extract service."""
