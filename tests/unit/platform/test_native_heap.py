"""glibc's malloc bounds: applied at service start unless the operator set them."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from shared import native_heap


def _glibc() -> bool:
    try:
        ctypes.CDLL("libc.so.6").mallopt  # noqa: B018
    except (OSError, AttributeError):
        return False
    return True


@pytest.mark.skipif(not _glibc(), reason="the bounds are glibc's mallopt")
def test_bounds_applied_in_a_fresh_process_unless_the_environment_sets_them() -> None:
    code = "from shared import native_heap; import os; print(sorted(native_heap.bound(os.environ)))"
    env = {"PATH": "/usr/bin:/bin"}
    both = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert both.stdout.strip() == "['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']"
    mine = subprocess.run(
        [sys.executable, "-c", code], env={**env, "MALLOC_ARENA_MAX": "4"}, capture_output=True, text=True, check=True
    )
    assert mine.stdout.strip() == "['MALLOC_MMAP_THRESHOLD_']"  # the operator's arena count stays


def test_no_glibc_means_no_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(_name: str) -> None:
        raise OSError("libc.so.6: cannot open shared object file")

    monkeypatch.setattr(native_heap.ctypes, "CDLL", missing)
    assert native_heap.bound({}) == {}
