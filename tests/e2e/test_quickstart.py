"""docs/quickstart.md runs: every snippet is executed against `memoryd up` (authentication on),
with the scripted upstream as the LLM, in the order a reader would run them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.fake_llm import FakeLlm

ROOT = Path(__file__).resolve().parents[2]
MEMORYD = [sys.executable, "-m", "memoryd.cli.main"]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the `memoryd` script
    return env | extra


def _run(kind: str, code: str, cwd: Path, env: dict[str, str]) -> str:
    argv = ["bash", "-euo", "pipefail", "-c", code] if kind in ("bash", "sh") else [sys.executable, "-c", code]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{kind} snippet failed:\n{code}\n{done.stderr[-3000:]}"
    return done.stdout


async def _ready(proc: asyncio.subprocess.Process) -> dict[str, str]:
    assert proc.stdout is not None
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), timeout=120)).decode()
        if not line:
            raise AssertionError(f"memoryd up exited ({await proc.wait()})")
        if line.startswith("memoryd ready "):
            return dict(f.split("=", 1) for f in line.split()[2:])


async def test_every_quickstart_snippet_runs(tmp_path: Path) -> None:
    blocks = BLOCK.findall((ROOT / "docs" / "quickstart.md").read_text())
    kinds = [k for k, _ in blocks]
    assert kinds == ["sh", "bash", "bash", "python", "python", "python", "json", "json"], kinds
    port = _free_port()
    async with FakeLlm() as llm:
        env = _env(MEMORYD_LLM_BASE_URL=llm.base_url)
        proc = await asyncio.create_subprocess_exec(
            *MEMORYD, "up", "--nats-port", str(_free_port()), "--gateway-port", str(port), "--metrics-port", "0",
            cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            ready = await _ready(proc)
            assert ready["gateway"] == f"http://127.0.0.1:{port}"
            snippets = [(k, code.replace("127.0.0.1:8420", f"127.0.0.1:{port}")) for k, code in blocks]
            assert snippets[0][1].strip() == "memoryd up"  # what this test started
            key = (await asyncio.to_thread(_run, *snippets[1], tmp_path, env)).strip()
            assert re.fullmatch(r"mk_[0-9a-f]{12}_[0-9a-f]{48}", key), key
            env["MEMORYD_KEY"] = key
            curl = await asyncio.to_thread(_run, *snippets[2], tmp_path, env)
            created, searched = (json.loads(line) for line in curl.replace("}{", "}\n{").splitlines() if line)
            assert created["memory"]["owner"] == "alice"
            assert any("TypeScript" in m["content"] for m in searched["memories"])
            llm.reply_text("Use TypeScript with Vite.")
            answer = await asyncio.to_thread(_run, *snippets[3], tmp_path, env)
            assert answer == "Use TypeScript with Vite.\n"
            assert "TypeScript" in llm.requests[-1]["messages"][0]["content"]
            llm.reply_text("Vite, for TypeScript.")
            answer = await asyncio.to_thread(_run, *snippets[4], tmp_path, env)  # the Responses API
            assert answer == "Vite, for TypeScript.\n"
            instructions = llm.requests[-1]["instructions"]
            assert instructions.startswith("Memory context:") and "TypeScript" in instructions
            assert instructions.endswith("Answer in one sentence.")
            hits = await asyncio.to_thread(_run, *snippets[5], tmp_path, env)  # no MEMORYD_NATS_*: client.json
            assert "PostgreSQL" in hits
            stdio_cfg = json.loads(snippets[6][1])["mcpServers"]["memoryd"]
            command = shutil.which(stdio_cfg["command"], path=env["PATH"])
            assert command is not None
            params = StdioServerParameters(command=command, args=stdio_cfg["args"], env=env, cwd=tmp_path)
            async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                found = await session.call_tool("memory_search", {"query": "TypeScript web projects"})
                assert not found.is_error and "TypeScript" in found.content[0].text
            http_cfg = json.loads(snippets[7][1].replace("mk_...", key))["mcpServers"]["memoryd"]
            async with (
                httpx2.AsyncClient(headers=http_cfg["headers"], timeout=30) as http,
                streamable_http_client(http_cfg["url"], http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                assert len((await session.list_tools()).tools) == 5
        finally:
            with contextlib.suppress(ProcessLookupError):  # it may have exited already: the test says why
                proc.send_signal(2)
            await asyncio.wait_for(proc.wait(), timeout=60)
