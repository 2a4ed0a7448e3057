"""Helpers for tests against real servers (used by ``tests/conftest.py`` and benchmarks)."""
