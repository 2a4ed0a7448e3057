"""The fault plans: what a chaos run kills, in which order, how long it stays down.

Every kill is a SIGKILL. A fault's ``act`` kills (and, for NATS and PostgreSQL, starts
again) and returns the moment the last piece was started again; recovery runs from then
until every service answers its health RPC with status ok. Two plans:

- ``single_plan``: each service alone, all five at once, NATS, PostgreSQL, then overlapping
  faults (PostgreSQL with an embed worker; NATS killed and restarted during a PostgreSQL
  outage; NATS with ingest and extract).
- ``cluster_plan``: one NATS node, later another, then the third (never two at once; each
  restarted and caught up before the next is killed), service processes alone and together
  with a node, each embed process.

Each has a ``short`` form for the CI tests (fewer service restarts, every kind of fault).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .stack import SERVICES, ChaosStack


@dataclass(frozen=True)
class Fault:
    label: str
    act: Callable[[], Awaitable[float]]  # returns time.monotonic() of the last restart


def services(stack: ChaosStack, *targets: tuple[str, int]) -> Fault:
    async def act() -> float:
        for name, index in targets:
            stack.kill_service(name, index)
        return time.monotonic()

    names = " + ".join(name if stack.embed_workers == 1 or name != "embed" else f"{name}-{i}" for name, i in targets)
    return Fault(f"SIGKILL {names}", act)


def nats_down(stack: ChaosStack, node: int, down_s: float, *with_services: tuple[str, int]) -> Fault:
    async def act() -> float:
        stack.kill_nats(node)
        for name, index in with_services:
            stack.kill_service(name, index)
        await asyncio.sleep(down_s)
        await stack.start_nats(node)
        return time.monotonic()

    what = f"NATS node n{node}" if stack.cluster else "NATS"
    extra = "".join(f" + {n}" if stack.embed_workers == 1 or n != "embed" else f" + {n}-{i}" for n, i in with_services)
    return Fault(f"SIGKILL {what}{extra}", act)


def postgres_down(stack: ChaosStack, down_s: float, *with_services: tuple[str, int]) -> Fault:
    async def act() -> float:
        stack.kill_postgres()
        for name, index in with_services:
            stack.kill_service(name, index)
        await asyncio.sleep(down_s)
        await stack.start_postgres()
        return time.monotonic()

    extra = "".join(f" + {n}" for n, _ in with_services)
    return Fault(f"SIGKILL PostgreSQL{extra}", act)


def nats_during_postgres_outage(stack: ChaosStack, down_s: float) -> Fault:
    async def act() -> float:
        stack.kill_postgres()
        await asyncio.sleep(down_s / 3)
        stack.kill_nats(0)
        await asyncio.sleep(down_s / 3)
        await stack.start_nats(0)
        await asyncio.sleep(down_s / 3)
        await stack.start_postgres()
        return time.monotonic()

    return Fault("SIGKILL PostgreSQL, then NATS during its outage", act)


def single_plan(stack: ChaosStack, down_s: float, *, short: bool = False) -> list[Fault]:
    """Every fault; ``short`` (CI): all services at once and the three overlapping faults."""
    everything = services(stack, *((name, 0) for name in SERVICES))
    overlapping = [
        postgres_down(stack, down_s, ("embed", 0)),
        nats_during_postgres_outage(stack, 1.5 * down_s),
        nats_down(stack, 0, down_s, ("ingest", 0), ("extract", 0)),
    ]
    if short:
        return [everything, *overlapping]
    alone = [services(stack, (name, 0)) for name in SERVICES]
    return [*alone, everything, nats_down(stack, 0, down_s), postgres_down(stack, down_s), *overlapping]


def cluster_plan(stack: ChaosStack, down_s: float, *, short: bool = False) -> list[Fault]:
    """Nodes n0, n1 (with one embed process), n2 (with ingest) in turn, service kills between;
    ``short`` (CI): n0, n1 with an embed process, then every service process at once."""
    last_embed = stack.embed_workers - 1
    first = nats_down(stack, 0, down_s)
    second = nats_down(stack, 1, down_s, ("embed", last_embed))
    if short:
        embeds = [("embed", i) for i in range(stack.embed_workers)]
        return [first, second, services(stack, *((n, 0) for n in SERVICES if n != "embed"), *embeds)]
    return [
        first,
        services(stack, ("ingest", 0), ("embed", 0)),
        second,
        services(stack, ("extract", 0), ("retrieve", 0)),
        services(stack, ("sleep", 0)),
        nats_down(stack, 2, down_s, ("ingest", 0)),
    ]
