"""glibc's allocator, bounded for a long-running service process.

Two defaults of glibc's malloc inflate a Python service's resident memory. Every thread that
allocates may get an arena of its own (up to eight per core), and memory freed in one arena
serves no other thread. And the mmap threshold is dynamic: once a large block (a numpy array
of a few MB) is freed, later blocks of that size come from an arena instead of ``mmap``, so
their memory stays with the process after they are freed. ``bound()`` caps the arenas at
``ARENA_MAX`` and fixes the threshold at ``MMAP_THRESHOLD`` (larger blocks are always mapped
and go back to the system when freed) through ``mallopt``, unless the process was started with
``MALLOC_ARENA_MAX`` or ``MALLOC_MMAP_THRESHOLD_`` set: an operator's choice wins. Where the C
library is not glibc, it does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping

#: ``mallopt`` parameters (glibc's malloc.h)
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENA_MAX = 2
MMAP_THRESHOLD = 128 * 1024


def bound(environ: Mapping[str, str]) -> dict[str, int]:
    """Apply the bounds that ``environ`` does not set itself; returns those applied."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return {}
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    applied: dict[str, int] = {}
    for variable, parameter, value in (
        ("MALLOC_ARENA_MAX", M_ARENA_MAX, ARENA_MAX),
        ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    ):
        if variable not in environ and mallopt(parameter, value) == 1:
            applied[variable] = value
    return applied
