"""The stack a chaos run breaks: NATS (one embedded server, or a three-node JetStream cluster),
embedded PostgreSQL with ``fsync=on``, a scripted LLM for the sleep worker, and every service
as a supervised child process (embed in ``embed_workers`` separate processes).

Every fault is a SIGKILL: of a service process (its supervisor restarts it), of a NATS server
or of the PostgreSQL postmaster (the run restarts them when the fault plan says so; both
recover from their own files: JetStream syncs before every ack, PostgreSQL replays its WAL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import time
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError
from memoryd.local.nats import EmbeddedNats
from memoryd.local.postgres import EmbeddedPostgres
from memoryd.local.supervisor import Child, Supervisor, child_env
from memoryd.local.up import apply_migrations, ensure_database
from shared.service_names import BACKEND_SERVICES
from tests.support.fake_llm import FakeLlm

from .cluster import NatsCluster

SERVICES = BACKEND_SERVICES


def keep_everything(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The sleep worker's LLM: every conflict pair is kept, no pattern, no affective candidate.

    So a sleep run reads and writes the owners' data (reviews, relations, receipts) during the
    faults without changing which turns and facts exist, and the counts stay exact."""
    prompt = str(request["messages"][-1]["content"])
    pairs = len(re.findall(r"^Pair \d+:$", prompt, flags=re.M))
    if prompt.startswith("Pairs of memories"):
        reply: dict[str, Any] = {"decisions": [{"pair": i, "action": "keep"} for i in range(pairs)]}
    elif "recurring patterns" in prompt:
        reply = {"patterns": []}
    else:
        reply = {"candidates": []}
    return 200, FakeLlm.completion(request, json.dumps(reply))


class ChaosStack:
    """Start, break and restart the pieces of one memoryd deployment."""

    def __init__(self, root: Path, *, cluster: bool = False, embed_workers: int = 1) -> None:
        self.root = root
        self.cluster = NatsCluster(root / "nats") if cluster else None
        self.single = None if cluster else EmbeddedNats(root / "nats")
        self.pg = EmbeddedPostgres(root / "pg")
        self.llm = FakeLlm()
        self.llm.handler = keep_everything
        self.embed_workers = embed_workers
        self.sup: Supervisor | None = None
        self.dsn = ""
        self.url = ""

    @property
    def nats_nodes(self) -> list[EmbeddedNats]:
        return self.cluster.nodes if self.cluster else [self.single] if self.single else []

    @property
    def replicas(self) -> int:
        return 3 if self.cluster else 1

    async def start(self) -> None:
        await self.llm.start()
        if self.cluster:
            self.url = self.cluster.start()
        else:
            assert self.single is not None
            self.url = self.single.start()
        for node in self.nats_nodes:
            node.requested_port = node.port  # a restarted server comes back at the same address
        admin = self.pg.start(fsync=True)
        self.pg.requested_port = self.pg.port
        await ensure_database(admin, "memoryd")
        self.dsn = self.pg.dsn("memoryd")
        await apply_migrations(self.dsn)
        env = child_env(
            {
                "MEMORYD_NATS_URL": self.url,
                "MEMORYD_NATS_REPLICAS": str(self.replicas),
                "MEMORYD_PG_DSN": self.dsn,
                "MEMORYD_METRICS_PORT": "0",
                "MEMORYD_NATS_ACK_WAIT_S": "10",
                "MEMORYD_LOG_LEVEL": "warning",
                "MEMORYD_LLM_BASE_URL": self.llm.base_url,
                "MEMORYD_LLM_MODEL": "fake",
                "MEMORYD_EXTRACT_LLM": "false",  # facts come from the rules alone, so they can be counted
                "MEMORYD_SLEEP_SCHEDULER": "false",  # the run asks for sleep runs itself
            }
        )
        self.sup = Supervisor(env)
        (self.root / "logs").mkdir(exist_ok=True)
        for name in SERVICES:
            for index in range(self.embed_workers if name == "embed" else 1):
                self.sup.add(name, index, log_path=self.root / "logs" / f"{name}-{index}.log")
        await self.wait_jetstream(60)
        await self.sup.start_all(timeout=180)

    async def wait_jetstream(self, timeout: float) -> None:
        """Until JetStream answers (a cluster needs a meta leader before streams can exist)."""
        import nats

        deadline = time.monotonic() + timeout
        while True:
            try:
                nc = await nats.connect(servers=self.url.split(","), allow_reconnect=False, connect_timeout=1)
                try:
                    await nc.jetstream(timeout=2).account_info()
                    return
                finally:
                    await nc.close()
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.3)

    async def stop(self) -> None:
        if self.sup is not None:
            await self.sup.stop_all()
        for node in self.nats_nodes:
            node.stop()
        self.pg.stop()
        await self.llm.close()

    def child(self, name: str, index: int = 0) -> Child:
        assert self.sup is not None
        return next(c for c in self.sup.children if (c.name, c.index) == (name, index))

    def kill_service(self, name: str, index: int = 0) -> None:
        """SIGKILL one service process; the supervisor starts a new one."""
        proc = self.child(name, index).proc
        assert proc is not None
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)

    def kill_nats(self, node: int = 0) -> None:
        self.nats_nodes[node].kill()

    async def start_nats(self, node: int = 0) -> None:
        await self._retry(self.nats_nodes[node].start)

    def kill_postgres(self) -> None:
        """SIGKILL the postmaster: no shutdown checkpoint; the next start replays the WAL."""
        self.pg.kill()

    async def start_postgres(self) -> None:
        await self._retry(lambda: self.pg.start(fsync=True))

    @staticmethod
    async def _retry(start: Any, timeout: float = 60.0) -> None:
        """Start again until it comes up (a killed postmaster's backends may hold the old
        shared memory a moment; a killed server's port may linger)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                await asyncio.to_thread(start)
                return
            except ConfigError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
