"""Unit tests of the ``memoryd`` and ``python -m bench`` command lines."""
