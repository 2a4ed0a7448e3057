"""Load that runs through a whole chaos run: searches from every owner, and sleep runs.

Each owner has its own searcher (one search at a time, a query naming one of its own chaos
tools). Every answer is checked: each memory it returns must be the owner's own (the
numbers in a chaos memory say which event, and so which owner, it came from). Each search
is recorded with its start, latency and outcome:

- ``ok``: an answer (``leaks`` counts memories of another owner in it: must stay 0);
- ``unavailable``: no answer because a dependency was down (a 503 ``DependencyDown``, or
  the client's own NATS connection was gone): expected while NATS is killed;
- ``server_error``: a 500-class answer, or any other error: must stay 0.

The sleep loop asks for one sleep run after another (owners in turn, ``wait=True``) and
records each run's final status, or ``unavailable`` when the RPC got no answer.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client
from nats.errors import Error as NatsError

from memoryd.client import MemoryClient
from memoryd.errors import DependencyDown, MemorydError
from memoryd.rpc import call
from memoryd.schemas.ops import SleepRunRequest

NUMBER = re.compile(r"\b(\d+)\b")


@dataclass(frozen=True)
class Sample:
    at: float  # monotonic start
    ms: float
    outcome: str  # ok | unavailable | server_error
    leaks: int = 0
    error: str = ""


def owner_of(content: str, owners: int) -> set[int]:
    """The owners whose events a chaos memory's numbers name (one owner for an honest one)."""
    return {int(n) % owners for n in NUMBER.findall(content)}


def classify(exc: BaseException) -> str:
    if isinstance(exc, DependencyDown):
        return "unavailable"
    if isinstance(exc, MemorydError):
        return "server_error" if exc.code >= 500 else f"client_error_{exc.code}"
    if isinstance(exc, NatsError | TimeoutError | ConnectionError):
        return "unavailable"
    return "server_error"


@dataclass
class SearchLoad:
    nc: Client
    owners: int
    events: int
    samples: list[Sample] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    #: pause after each answered search: short while faults are injected, longer afterwards, so
    #: that the searches' query embeddings leave the embed workers to the backlog
    pace_s: float = 0.05

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(self._searcher(o, stop) for o in range(self.owners)))

    async def _searcher(self, owner: int, stop: asyncio.Event) -> None:
        client = MemoryClient(self.nc, timeout=5.0)
        rng = random.Random(owner)
        while not stop.is_set():
            i = rng.randrange(owner, max(self.events, owner + 1), self.owners)
            t0 = time.monotonic()
            try:
                result = await client.retrieve(f"owner-{owner}", f"chaos tool {i}", limit=10)
            except Exception as exc:  # every failure is classified and counted
                outcome = classify(exc)
                self.errors[f"{outcome}: {type(exc).__name__}"] += 1
                self.samples.append(Sample(t0, (time.monotonic() - t0) * 1000, outcome, error=str(exc)[:200]))
                await asyncio.sleep(0.2)
                continue
            leaks = sum(1 for m in result.memories if owner_of(m.content, self.owners) - {owner})
            self.samples.append(Sample(t0, (time.monotonic() - t0) * 1000, "ok", leaks))
            await asyncio.sleep(self.pace_s)


@dataclass
class SleepLoad:
    nc: Client
    owners: int
    statuses: Counter[str] = field(default_factory=Counter)

    async def run_once(self, owner: int, timeout: float = 60.0) -> str:
        request = SleepRunRequest(owner=f"owner-{owner}", wait=True, timeout_s=timeout)
        try:
            result = await call(self.nc, "sleep.run", request, timeout=timeout + 5)
        except Exception as exc:  # counted
            return classify(exc)
        return str(result.run.status) if result.run is not None else "no run"

    async def run(self, stop: asyncio.Event) -> None:
        owner = 0
        while not stop.is_set():
            self.statuses[await self.run_once(owner)] += 1
            owner = (owner + 1) % self.owners
            await asyncio.sleep(0.5)


def p99(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)


def window_stats(samples: list[Sample], start: float, end: float) -> dict[str, Any]:
    """Searches started in ``[start, end)``: counts per outcome, leaks, p99 of the answered ones."""
    inside = [s for s in samples if start <= s.at < end]
    outcomes = Counter(s.outcome for s in inside)
    return {
        "searches": len(inside),
        "ok": outcomes["ok"],
        "unavailable": outcomes["unavailable"],
        "server_errors": sum(n for o, n in outcomes.items() if o not in ("ok", "unavailable")),
        "leaks": sum(s.leaks for s in inside),
        "p99_ms": p99([s.ms for s in inside if s.outcome == "ok"]),
    }
