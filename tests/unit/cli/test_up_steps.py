"""``memoryd up`` prints each start step with its time, and what a slow step is waiting for
(from a watcher thread, so a step that blocks the event loop still says so)."""

from __future__ import annotations

import io
import re
import time

from memoryd.local.steps import Steps


def test_a_quick_step_prints_one_line_with_its_time_and_detail() -> None:
    out = io.StringIO()
    steps = Steps(out, slow_after_s=5.0)
    with steps.step("migrations", "PostgreSQL") as note:
        note["detail"] = "3 applied"
    assert re.fullmatch(r"memoryd up: migrations done in 0\.\d s \(3 applied\)\n", out.getvalue())


def test_a_slow_step_says_what_it_is_waiting_for_until_it_is_done() -> None:
    out = io.StringIO()
    late = ["embed-0", "retrieve-0"]
    steps = Steps(out, slow_after_s=0.1, every_s=0.2)
    with steps.step("services", lambda: ", ".join(late)):
        time.sleep(0.25)  # blocks, as starting NATS and PostgreSQL block the loop
        late.remove("embed-0")
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"memoryd up: services: still waiting for embed-0, retrieve-0 \(0 s\)", lines[0]), lines
    assert "memoryd up: services: still waiting for retrieve-0 (0 s)" in lines[1:-1], lines
    assert re.fullmatch(r"memoryd up: services done in 0\.[5-9] s", lines[-1]), lines
    time.sleep(0.3)
    assert out.getvalue().splitlines() == lines  # the watcher stopped with the step
