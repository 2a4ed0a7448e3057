"""Fuzzing of every subject and RPC of memoryd with hypothesis (issue 8)."""
