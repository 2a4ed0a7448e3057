"""Logging and metrics shared by every service."""
