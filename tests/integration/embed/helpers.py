"""Helpers for the embed service tests: memories, jobs, polling, metrics, worker processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from nats.js import JetStreamContext
from prometheus_client import REGISTRY

from bench.embed import scrape as scrape  # the metrics-page reader, re-exported for the tests
from memoryd.codec import encode
from memoryd.schemas import EmbedJob, MemoryRecord
from memoryd.subjects import EMBED_CONSUMER, EMBED_JOBS, JOBS_STREAM
from shared.db import memories

SIG = "local:all-MiniLM-L6-v2:384:turn1"  # chat turns embedded with their context (shared.turn_context)
SIG_INT8 = "local:all-MiniLM-L6-v2:384:dynamic-int8:turn1"
ROOT = Path(__file__).resolve().parents[3]


async def add_memories(pool: asyncpg.Pool, owner: str, texts: Sequence[str]) -> list[MemoryRecord]:
    return [await memories.insert(pool, owner=owner, memory_type="factual", content=t, source="api") for t in texts]


def job_of(m: MemoryRecord, reason: str = "new") -> EmbedJob:
    return EmbedJob(memory_id=m.id, owner=m.owner, content_hash=m.content_hash, reason=reason)  # type: ignore[arg-type]


async def publish(js: JetStreamContext, jobs: Sequence[EmbedJob]) -> None:
    await asyncio.gather(*(js.publish(EMBED_JOBS, encode(j)) for j in jobs))


async def embedded_count(pool: asyncpg.Pool, ids: Sequence[str], signature: str = SIG) -> int:
    return int(
        await pool.fetchval(
            "SELECT count(*) FROM memories WHERE id = ANY($1::uuid[]) AND NOT needs_reindex"
            " AND embedding_signature = $2",
            list(ids),
            signature,
        )
    )


async def vectors_of(pool: asyncpg.Pool, ids: Sequence[str], signature: str = SIG) -> dict[str, np.ndarray]:
    rows = await pool.fetch(
        "SELECT memory_id, embedding FROM memory_embeddings WHERE memory_id = ANY($1::uuid[]) AND signature = $2",
        list(ids),
        signature,
    )
    return {str(r["memory_id"]): _array(r["embedding"]) for r in rows}


def _array(value: Any) -> np.ndarray:
    """pgvector's codec gives a `Vector` (to_numpy) or a numpy array, depending on its version."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64)))


def sample(name: str, labels: Mapping[str, str] | None = None) -> float:
    """A metric of this process (in-process services share the default registry)."""
    return REGISTRY.get_sample_value(name, dict(labels or {})) or 0.0


async def queue_drained(js: JetStreamContext) -> bool:
    info = await js.consumer_info(JOBS_STREAM, EMBED_CONSUMER)
    return (info.num_pending or 0) == 0 and (info.num_ack_pending or 0) == 0


class Worker:
    """`python -m services.embed` as a child process; `metrics_url` once it printed ready."""

    def __init__(self, env: Mapping[str, str], log_path: Path) -> None:
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None
        self.metrics_url = ""

    async def start(self, timeout: float = 90.0) -> Worker:
        log = self.log_path.open("ab")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "services.embed", stdout=asyncio.subprocess.PIPE, stderr=log, env=self.env, cwd=ROOT
        )
        log.close()
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self._ready_line(), timeout)
        self.metrics_url = line.split("metrics=", 1)[1].strip()
        return self

    async def _ready_line(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            raw = await self.proc.stdout.readline()
            if not raw:
                raise AssertionError(f"worker exited before ready; log: {self.log_tail()}")
            line = raw.decode()
            if line.startswith("memoryd service ready"):
                return line

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)

    async def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None or self.proc.returncode is not None:
            return self.proc.returncode if self.proc else None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()


@contextlib.asynccontextmanager
async def workers(n: int, env: Mapping[str, str], log_dir: Path) -> AsyncIterator[list[Worker]]:
    started: list[Worker] = []
    try:
        for i in range(n):
            started.append(await Worker(env, log_dir / f"embed-{i}.log").start())
        yield started
    finally:
        for w in started:
            await w.stop()


def worker_env(nats_url: str, dsn: str, **extra: Any) -> dict[str, str]:
    return {
        "MEMORYD_NATS_URL": nats_url,
        "MEMORYD_PG_DSN": dsn,
        "MEMORYD_METRICS_PORT": "0",
        "MEMORYD_EMBED_SOURCE": "local",
        **{f"MEMORYD_{k.upper()}": str(v) for k, v in extra.items()},
    }


async def run_cli(args: Sequence[str], env: Mapping[str, str], timeout: float = 180) -> tuple[int, str, str]:
    """`memoryd ARGS` in a child process (async: in-process services keep running meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "memoryd.cli.main",
        *args,
        env={**os.environ, **env},
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()
