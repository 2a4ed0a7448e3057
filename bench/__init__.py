"""Benchmarks that run through the real services: retrieval quality (LoCoMo) and latency.

``locomo`` is pure (data, formatting, metrics); ``harness`` starts an embedded stack;
``quality`` and ``latency`` drive it; ``bench.cli`` exposes them as
``python -m bench quality|latency``.
"""
