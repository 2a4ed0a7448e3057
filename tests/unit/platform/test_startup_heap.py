"""A service process freezes its start-up heap once ready, so full collections skip it."""

from __future__ import annotations

import subprocess
import sys


def test_freeze_startup_heap_moves_the_live_objects_out_of_the_collectors_reach() -> None:
    # in a child process: freezing this test process would keep every later test's objects
    code = (
        "import gc, json\n"
        "from shared.service import freeze_startup_heap\n"
        "cycle = []; cycle.append(cycle); del cycle\n"  # start-up garbage: collected, not frozen
        "before = gc.get_freeze_count()\n"
        "freeze_startup_heap()\n"
        "print(json.dumps([before, gc.get_freeze_count(), len(gc.get_objects())]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, frozen, tracked = (int(x) for x in out.strip().strip("[]").split(","))
    assert before == 0
    assert frozen > 1000  # the modules, classes and functions imported so far
    assert tracked < 100  # what the collector still walks: only what was made after the freeze
