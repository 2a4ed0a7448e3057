"""The retrieve service."""
