"""What a service process loads at start: heavy optional dependencies only where they are used.

qdrant-client (with grpc, pydantic and protobuf) costs ~90 MB resident at import and serves
only a configured Qdrant; onnxruntime belongs to the embed worker alone; httpx (which pulls
in click and rich) only to a remote embedding source there; the MCP SDK (with pydantic, ~27 MB)
to a gateway once ``/mcp`` is first used; cryptography (~8 MB) to the first sealed secret;
numpy (~17 MB, for pgvector's codec and the vector stores) to services with a database;
aiohttp (~14 MB, nats-py's WebSocket transport) to the gateway's chat proxy; rich and click
(structlog's and httpx's optional extras, ~10 MB) to the command line (``shared.lean_imports``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "qdrant_client",
    "grpc",
    "onnxruntime",
    "httpx",
    "mcp",
    "pydantic",
    "cryptography",
    "numpy",
    "aiohttp",
    "rich",
    "click",
)


def _loaded(module: str) -> dict[str, bool]:
    code = f"import sys, json, {module}; print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded: dict[str, bool] = json.loads(out.splitlines()[-1])
    return loaded


@pytest.mark.parametrize("service", ["ingest", "retrieve", "extract", "sleep", "embed"])
def test_no_qdrant_client_at_import(service: str) -> None:
    loaded = _loaded(f"services.{service}.app")
    assert not loaded["qdrant_client"] and not loaded["grpc"] and not loaded["cryptography"]
    assert loaded["onnxruntime"] == (service == "embed")
    assert not loaded["aiohttp"] and not loaded["rich"] and not loaded["click"]


def test_embed_worker_imports_no_http_client() -> None:
    assert not _loaded("services.embed.app")["httpx"]


def test_gateway_loads_the_mcp_sdk_only_when_mcp_is_used() -> None:
    loaded = _loaded("services.gateway.app")
    assert not loaded["mcp"] and not loaded["pydantic"] and not loaded["qdrant_client"]
    assert not loaded["numpy"]  # no database, so no pgvector codec
    assert not loaded["rich"] and not loaded["click"]
