"""mem0 as the peer of ``python -m bench peers``: offline, on the same PostgreSQL and the same model.

mem0 (``mem0ai``, optional: ``pip install -e '.[peers]'``) runs in the benchmark's process as a
library, configured so that nothing leaves the machine: ``Memory.add(text, user_id=owner,
infer=False)`` stores the text as it is, ``Memory.search(query, filters={"user_id": owner},
top_k=10)`` searches. Its vector store is mem0's ``pgvector`` provider in its own database of the
embedded PostgreSQL; its embedder is ``MiniLmEmbedding``, an adapter over memoryd's own
``LocalEmbedder``, so both engines embed with the same model and code. mem0's configured
embedder and LLM point at an unroutable address (TEST-NET-1, RFC 5737) and LLM calls are counted.
Telemetry is off and mem0's files live in a temp dir; without spaCy mem0 does no lemmatization.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from services.embed.adapters import LocalEmbedder

#: TEST-NET-1 (RFC 5737), port 9 (discard): never routed, so a call can only fail.
UNROUTABLE_URL = "http://192.0.2.1:9/v1"
DATABASE = "mem0"
DIM = 384


def installed_version() -> str | None:
    """The installed ``mem0ai`` version, or None when the optional extra is not installed."""
    try:
        return version("mem0ai")
    except PackageNotFoundError:
        return None


def database_dsn(pg_dsn: str, database: str = DATABASE) -> str:
    """``pg_dsn`` with its database replaced by ``database`` (same server, same user)."""
    parts = urlsplit(pg_dsn)
    return parts._replace(path=f"/{database}").geturl()


class MiniLmEmbedding:
    """mem0's embedder interface over memoryd's ``LocalEmbedder`` (same model, same code)."""

    def __init__(self, embedder: LocalEmbedder) -> None:
        self._embedder = embedder
        self._lock = threading.Lock()
        self.texts = 0

    def _count(self, n: int) -> None:
        with self._lock:
            self.texts += n

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        self._count(1)
        return [float(x) for x in self._embedder.embed([text])[0]]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        self._count(len(texts))
        return [[float(x) for x in row] for row in self._embedder.embed(list(texts))]


def config(dsn: str, workdir: Path, collection: str, maxconn: int) -> dict[str, Any]:
    """mem0's ``MemoryConfig`` as a dict: pgvector on ``dsn``, LLM and embedder unroutable."""
    unroutable = {"api_key": "unused", "openai_base_url": UNROUTABLE_URL}
    return {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": dsn,
                "collection_name": collection,
                "embedding_model_dims": DIM,
                "hnsw": True,
                "minconn": 1,
                "maxconn": maxconn,
            },
        },
        "embedder": {"provider": "openai", "config": {**unroutable, "embedding_dims": DIM}},
        "llm": {"provider": "openai", "config": {**unroutable, "model": "unused"}},
        "history_db_path": str(workdir / "history.db"),
    }


class Mem0Peer:
    """One mem0 ``Memory`` with the local embedder plugged in; synchronous, thread-safe calls."""

    def __init__(self, memory: Any, embedder: MiniLmEmbedding) -> None:
        self.memory = memory
        self.embedder = embedder
        self.llm_calls = 0
        original = memory.llm.generate_response

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.llm_calls += 1
            return original(*args, **kwargs)

        memory.llm.generate_response = counted

    @classmethod
    def open(cls, dsn: str, workdir: Path, *, collection: str, maxconn: int, embedder: LocalEmbedder) -> Mem0Peer:
        """A ``Memory`` on ``dsn``; ``MEM0_*`` environment set before mem0 is imported."""
        workdir.mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(workdir)
        mem0 = importlib.import_module("mem0")
        # mem0 reads MEM0_TELEMETRY once, at import: if something imported it before, turn it off here too
        for name in ("mem0.memory.telemetry", "mem0.memory.main"):
            setattr(importlib.import_module(name), "MEM0_TELEMETRY", False)  # noqa: B010
        memory = mem0.Memory.from_config(config(dsn, workdir, collection, maxconn))
        adapter = MiniLmEmbedding(embedder)
        memory.embedding_model = adapter
        peer = cls(memory, adapter)
        peer.count()  # creates the collection now: mem0 does it lazily, racing under concurrent first adds
        return peer

    def add(self, owner: str, text: str) -> str:
        """Store ``text`` as it is (``infer=False``); return mem0's memory id."""
        out = self.memory.add(text, user_id=owner, infer=False)
        return str(out["results"][0]["id"])

    def search(self, owner: str, query: str, limit: int) -> list[str]:
        """The contents of mem0's top ``limit`` for ``query`` (threshold 0: no result cut by score)."""
        out = self.memory.search(query, filters={"user_id": owner}, top_k=limit, threshold=0.0)
        return [str(r["memory"]) for r in out["results"]]

    def count(self) -> int:
        """Rows in the collection (every added memory is searchable as soon as ``add`` returns)."""
        return int(self.memory.vector_store.col_info()["count"])

    def close(self) -> None:
        self.memory.close()
