"""What ``memoryd up`` is doing while it starts: each step on stderr with its time, and what it
is waiting for when a step is slow.

A step is timed from entry to exit (``done in 1.2 s``). A watcher thread, not the event loop,
says ``still waiting for ...`` after ``slow_after_s`` and then every ``every_s``, because some
steps (starting NATS and PostgreSQL) block the loop while they wait.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

PREFIX = "memoryd up:"


class Steps:
    def __init__(
        self,
        out: TextIO | None = None,
        *,
        slow_after_s: float = 5.0,
        every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out = out
        self.slow_after_s = slow_after_s
        self.every_s = every_s
        self.clock = clock
        self.started = clock()

    def say(self, text: str) -> None:
        out = self.out or sys.stderr  # the stream as it is now (tests replace sys.stderr)
        print(f"{PREFIX} {text}", file=out, flush=True)

    @contextlib.contextmanager
    def step(self, name: str, waiting_for: str | Callable[[], str]) -> Iterator[dict[str, str]]:
        """Time ``name``; the dict it yields takes a ``detail`` shown on the done line."""
        what = waiting_for if callable(waiting_for) else (lambda: waiting_for)
        started = self.clock()
        done = threading.Event()

        def watch() -> None:
            delay = self.slow_after_s
            while not done.wait(delay):
                self.say(f"{name}: still waiting for {what()} ({self.clock() - started:.0f} s)")
                delay = self.every_s

        watcher = threading.Thread(target=watch, name=f"up-step-{name}", daemon=True)
        watcher.start()
        result: dict[str, str] = {}
        try:
            yield result
        finally:
            done.set()
            watcher.join()
        detail = f" ({result['detail']})" if result.get("detail") else ""
        self.say(f"{name} done in {self.clock() - started:.1f} s{detail}")

    def total(self) -> float:
        return self.clock() - self.started
