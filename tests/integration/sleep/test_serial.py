"""Sleep workers sharing one queue: serial per owner, at most `sleepMaxConcurrentRuns` at once.

- limit 1 (the default): three in-process replicas and 30 runs of 10 owners never overlap at
  all, and the jobs are shared between replicas;
- limit 4: three worker processes (`python -m services.sleep`) and 200 runs of 50 owners: no
  two runs of one owner overlap, 4 run at once and never more, every run is recorded once,
  and a worker SIGKILLed in the middle of runs leaves no stuck lock: another worker redoes
  each of those runs to the end, or the owner's next run closes it as `failed: interrupted`.

Overlap is read from the recorded `started_at`/`finished_at` of each run, and cross-checked
on the LLM side (every run asks the scripted LLM once, in its pattern phase).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.ops import SleepRunRequest
from memoryd.subjects import SLEEP_CONSUMER, SLEEP_STREAM
from services.sleep import app, runner
from shared.service import ServiceContext, serve
from tests.support.eventually import eventually

from .conftest import SleepLlm, add_memory, put_settings, sleep_config

ROOT = Path(__file__).resolve().parents[3]
OWNER = re.compile(r"\bowner-\d+\b")
FINAL = ("ok", "noop", "degraded", "refreshed", "aborted", "failed")


def max_overlap(intervals: Sequence[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end at t closes before a start at t)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    now = best = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


async def wait_final(pool: asyncpg.Pool, run_ids: list[str], timeout: float) -> None:
    async def open_runs() -> int:
        return int(
            await pool.fetchval(
                "SELECT count(*) FROM dream_runs WHERE status IN ('queued', 'running') AND id::text = ANY($1)", run_ids
            )
        )

    async def all_final() -> bool:
        return await open_runs() == 0

    await eventually(all_final, "every run final", timeout=timeout, interval=0.25, state=open_runs)


async def queue_runs(nc: Client, owners: Sequence[str], count: int) -> list[str]:
    return [(await call(nc, "sleep.run", SleepRunRequest(owner=owners[i % len(owners)]))).run_id for i in range(count)]


async def run_rows(pool: asyncpg.Pool, run_ids: list[str]) -> list[asyncpg.Record]:
    return list(
        await pool.fetch(
            "SELECT id, owner, status, reason, started_at, finished_at, receipt, counters->>'worker' AS worker"
            " FROM dream_runs WHERE id::text = ANY($1) ORDER BY started_at",
            run_ids,
        )
    )


async def test_at_limit_one_three_replicas_never_overlap(
    nats_server: EmbeddedNats,
    pg_dsn: str,
    pool: asyncpg.Pool,
    nc: Client,
    llm: SleepLlm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owners = [f"owner-{i}" for i in range(10)]
    await put_settings(pool, "*", {"sleepPatternMinMemories": 1})
    for owner in owners:
        await add_memory(pool, owner, f"{owner} likes tea")

    async def slow(prompt: str) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return {"patterns": []}

    llm.phases["patterns"] = slow
    workers: Counter[int] = Counter()
    real_execute = runner.execute

    async def counted(deps: Any, *args: Any) -> Any:
        workers[id(deps)] += 1
        return await real_execute(deps, *args)

    monkeypatch.setattr(runner, "execute", counted)
    config = sleep_config(nats_server, pg_dsn, llm)
    stops = [asyncio.Event() for _ in range(3)]
    ready: list[ServiceContext] = []
    tasks = [
        asyncio.create_task(
            serve("sleep", config, app.setup, stop=stop, on_ready=ready.append, settings=app.load_settings(os.environ))
        )
        for stop in stops
    ]
    try:
        await eventually(lambda: asyncio.sleep(0, len(ready) == 3), "three workers ready", timeout=30)
        run_ids = await queue_runs(nc, owners, 30)
        await wait_final(pool, run_ids, 240)
    finally:
        for stop in stops:
            stop.set()
        await asyncio.gather(*tasks)

    rows = await run_rows(pool, run_ids)
    assert len(rows) == 30
    assert all(r["status"] == "noop" for r in rows), Counter(r["status"] for r in rows)
    for before, after in itertools.pairwise(rows):
        assert before["started_at"] < before["finished_at"] <= after["started_at"], (before, after)
    assert len(llm.prompts("patterns")) == 30
    # which replica wins the one slot is not fixed: the three may share the jobs or one may take them all
    assert sum(workers.values()) == 30


class WorkerProcess:
    """`python -m services.sleep` as a child process."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self, timeout: float = 90.0) -> WorkerProcess:
        with self.log_path.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "services.sleep",
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=self.env,
                cwd=ROOT,
            )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
            if not line:
                raise AssertionError(f"sleep worker exited before ready: {self.log_path.read_text()[-2000:]}")
            if b"ready" in line:
                asyncio.get_running_loop().create_task(self._drain())
                return self
        raise AssertionError("sleep worker not ready")

    async def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while await self.proc.stdout.readline():
            pass

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


@contextlib.asynccontextmanager
async def start_workers(n: int, env: dict[str, str], log_dir: Path) -> AsyncIterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    try:
        for i in range(n):
            started.append(await WorkerProcess(env, log_dir / f"sleep-{i}.log").start())
        yield started
    finally:
        for worker in started:
            await worker.stop()


async def test_at_limit_four_three_processes_two_hundred_runs_and_a_killed_worker(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm, tmp_path: Path
) -> None:
    owners = [f"owner-{i}" for i in range(50)]
    victim = owners[0]
    await put_settings(pool, "*", {"sleepMaxConcurrentRuns": 4, "sleepPatternMinMemories": 1})
    for owner in owners:
        await add_memory(pool, owner, f"{owner} likes tea")

    calls: list[tuple[str, float, float]] = []  # (owner, start, end) of answered LLM calls
    in_flight: Counter[str] = Counter()
    peak_per_owner: Counter[str] = Counter()
    victim_hung = asyncio.Event()
    hung_at: list[float] = []

    async def patterns(prompt: str) -> dict[str, Any]:
        owner = OWNER.search(prompt)
        assert owner is not None
        name = owner.group(0)
        if name == victim and not victim_hung.is_set():
            hung_at.append(time.monotonic())
            victim_hung.set()
            await asyncio.sleep(60)  # its worker is killed meanwhile; this reply goes nowhere
            return {"patterns": []}
        in_flight[name] += 1
        peak_per_owner[name] = max(peak_per_owner[name], in_flight[name])
        started = time.monotonic()
        await asyncio.sleep(0.2)
        in_flight[name] -= 1
        calls.append((name, started, time.monotonic()))
        return {"patterns": []}

    llm.phases["patterns"] = patterns
    env = {
        "MEMORYD_NATS_URL": nats_server.url,
        "MEMORYD_PG_DSN": pg_dsn,
        "MEMORYD_METRICS_PORT": "0",
        "MEMORYD_LLM_BASE_URL": llm.fake.base_url,
        "MEMORYD_LLM_MODEL": "fake",
        "MEMORYD_SLEEP_SCHEDULER": "false",
        "MEMORYD_SLEEP_ACK_WAIT_S": "3",
        "MEMORYD_SLEEP_LOCK_POLL_S": "0.1",
        "MEMORYD_SLEEP_REQUEUE_S": "0.3",
    }
    async with start_workers(3, env, tmp_path) as workers:
        run_ids = await queue_runs(nc, owners, 200)
        await asyncio.wait_for(victim_hung.wait(), 120)

        async def victim_running() -> asyncpg.Record | None:
            row = await pool.fetchrow(
                "SELECT id, counters->>'worker' AS worker FROM dream_runs WHERE owner = $1 AND status = 'running'",
                victim,
            )
            return row if row is not None and row["worker"] else None

        row = await eventually(victim_running, "the victim's run claimed by a worker", timeout=10)
        killed = next(w for w in workers if row["worker"].endswith(f":{w.pid}"))
        killed_at = time.monotonic()
        assert killed.proc is not None
        killed.proc.send_signal(signal.SIGKILL)
        await killed.proc.wait()
        cut = [
            r["id"]
            for r in await pool.fetch(
                "SELECT id FROM dream_runs WHERE status = 'running' AND counters->>'worker' = $1", row["worker"]
            )
        ]
        await wait_final(pool, run_ids, 300)
        info = await nc.jetstream().consumer_info(SLEEP_STREAM, SLEEP_CONSUMER)

    rows = await run_rows(pool, run_ids)
    assert len(rows) == 200  # none lost
    receipts = [r["receipt"] for r in rows if r["receipt"] is not None]
    assert len(set(receipts)) == len(receipts)  # no run recorded twice
    assert all(r["id"] in cut for r in rows if r["receipt"] is None)  # only the killed worker's runs lack one
    assert info.num_pending == 0 and info.num_ack_pending == 0  # every job acked, none left behind
    by_id = {r["id"]: r for r in rows}
    assert row["id"] in cut
    for run_id in cut:  # the killed worker's runs: redone by another worker, or closed by its owner's next run
        done = by_id[run_id]
        assert (done["status"], done["reason"]) in (("noop", "manual"), ("failed", "interrupted")), done
        assert done["worker"] != row["worker"] or done["status"] == "failed"
    assert all(r["status"] == "noop" for r in rows if r["id"] not in cut)

    for owner in owners:
        mine = [r for r in rows if r["owner"] == owner]
        assert len(mine) == 4
        for before, after in itertools.pairwise(mine):
            assert before["finished_at"] <= after["started_at"], (before, after)
    intervals = [(r["started_at"].timestamp(), r["finished_at"].timestamp()) for r in rows if r["status"] == "noop"]
    assert max_overlap(intervals) == 4

    assert max(peak_per_owner.values()) == 1  # never two LLM calls of one owner at once
    # the hung call holds its run's slot until the kill, unless the client gave up on it and asked again
    asked_again = [s for name, s, _ in calls if name == victim and s > hung_at[0]]
    hung_until = min([killed_at, *asked_again])
    before_kill = [(s, e) for _, s, e in calls if e <= killed_at] + [(hung_at[0], hung_until)]
    assert max_overlap(before_kill) == 4
    answered = Counter(name for name, _, _ in calls)
    victim_done = sum(1 for r in rows if r["owner"] == victim and r["status"] == "noop")
    assert answered[victim] == victim_done  # a redone run asked once more; the cut call was never answered
    # every other owner's finished runs were answered; a run of the killed worker that its owner's
    # next run closed as interrupted may have died before its answer
    finished = Counter(r["owner"] for r in rows if r["status"] == "noop")
    assert all(answered[o] >= finished[o] >= 3 for o in owners if o != victim)
