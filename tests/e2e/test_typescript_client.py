"""The TypeScript client (clients/typescript) under Node against ``memoryd up``: built from a copy
with ``npm ci && npm run build`` (types checked against clients/openapi.json, then tsc), its
``node --test`` suite run with the gateway's URL and an owner key, the docs' example run, and the
proxy example run with the ``openai`` npm package against a scripted upstream."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLlm
from tests.support.up import RunningUp, clean_env, memoryd_cli

pytestmark = pytest.mark.slow
CLIENTS = Path(__file__).resolve().parents[2] / "clients"
DOCS = CLIENTS.parent / "docs"


def _run(*args: str, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def client_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built copy of the client (the generator reads ``../openapi.json``, so that comes along)."""
    assert shutil.which("node") and shutil.which("npm"), "Node.js and npm are needed: make node installs them"
    root = tmp_path_factory.mktemp("ts")
    shutil.copy(CLIENTS / "openapi.json", root / "openapi.json")
    target = root / "typescript"
    shutil.copytree(CLIENTS / "typescript", target, ignore=shutil.ignore_patterns("node_modules", "dist"))
    env = clean_env()
    for step in (("npm", "ci", "--no-audit", "--no-fund"), ("npm", "run", "build")):
        done = _run(*step, cwd=target, env=env)
        assert done.returncode == 0, f"{' '.join(step)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert (target / "dist" / "index.js").is_file() and (target / "dist" / "index.d.ts").is_file()
    return target


@pytest.fixture(scope="module")
def owner_key(stack: RunningUp) -> str:
    created = memoryd_cli("keys", "create", "--owner", "ts-client", env=clean_env(MEMORYD_DATA_DIR=str(stack.data_dir)))
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def test_served_document_is_the_committed_one(stack: RunningUp) -> None:
    with urllib.request.urlopen(f"{stack.ready['gateway']}/openapi.json", timeout=30) as reply:
        served = json.loads(reply.read())
    assert served == json.loads((CLIENTS / "openapi.json").read_text())


@pytest.fixture(scope="module")
def operator_key(stack: RunningUp) -> str:
    created = memoryd_cli("keys", "create", "--operator", env=clean_env(MEMORYD_DATA_DIR=str(stack.data_dir)))
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def test_node_suite_passes_against_the_stack(
    stack: RunningUp, client_dir: Path, owner_key: str, operator_key: str
) -> None:
    env = clean_env(MEMORYD_URL=stack.ready["gateway"], MEMORYD_API_KEY=owner_key, MEMORYD_OPERATOR_KEY=operator_key)
    done = _run("node", "--test", "--test-reporter=tap", "test/", cwd=client_dir, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    summary = dict(re.findall(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", done.stdout, re.M))
    declared = sum(len(re.findall(r"^test\(", p.read_text(), re.M)) for p in (client_dir / "test").glob("*.test.mjs"))
    assert declared >= 16
    assert summary == {
        "tests": str(declared),
        "pass": str(declared),
        "fail": "0",
        "cancelled": "0",
        "skipped": "0",
        "todo": "0",
    }, output[-4000:]


def test_docs_example_runs(stack: RunningUp, client_dir: Path) -> None:
    example = (client_dir / "examples" / "quickstart.mjs").read_text()
    shown = (DOCS / "clients.md").read_text().split("```js\n", 1)[1].split("```", 1)[0]
    assert shown in example, "docs/clients.md shows clients/typescript/examples/quickstart.mjs"
    key = memoryd_cli("keys", "create", "--owner", "ts-example", env=clean_env(MEMORYD_DATA_DIR=str(stack.data_dir)))
    assert key.returncode == 0, key.stderr
    env = clean_env(MEMORYD_URL=stack.ready["gateway"], MEMORYD_API_KEY=key.stdout.strip())
    done = _run("node", "examples/quickstart.mjs", cwd=client_dir, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    window = [line for line in lines if line.endswith(" I prefer window seats on long flights.")]
    assert len(window) == 1 and re.match(r"\d\.\d{3} (keyword|pgvector|qdrant|recent) ", window[0]), done.stdout
    assert re.fullmatch(r"deleted [0-9a-f-]{36}", lines[-1]), done.stdout


def _remembered(gateway: str, key: str, text: str, timeout: float = 60.0) -> bool:
    request = urllib.request.Request(f"{gateway}/v1/memories?limit=50", headers={"authorization": f"Bearer {key}"})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(request, timeout=30) as reply:
            if any(m["content"] == text for m in json.loads(reply.read())["memories"]):
                return True
        time.sleep(0.3)
    return False


async def test_proxy_example_with_the_openai_sdk(stack: RunningUp, client_dir: Path) -> None:
    """clients/typescript/examples/proxy.mjs: the OpenAI SDK through the proxy to the key's upstream."""
    async with FakeLlm() as llm:
        llm.reply_text("Use TypeScript with Vite.")
        created = await asyncio.to_thread(
            memoryd_cli,
            *("keys", "create", "--owner", "ts-proxy", "--upstream", llm.base_url),
            env=clean_env(MEMORYD_DATA_DIR=str(stack.data_dir)),
        )
        assert created.returncode == 0, created.stderr
        key = created.stdout.strip()
        env = clean_env(MEMORYD_URL=stack.ready["gateway"], MEMORYD_API_KEY=key, MODEL="fake-llm")
        proc = await asyncio.create_subprocess_exec(
            "node", "examples/proxy.mjs", cwd=client_dir, env=env, stdout=-1, stderr=-1
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert out.decode().splitlines() == ["memory: injected, 1 injected", "answer: Use TypeScript with Vite."]
    assert len(llm.requests) == 1 and llm.requests[0]["model"] == "fake-llm"
    system, user = llm.requests[0]["messages"]
    assert system["role"] == "system" and system["content"].startswith("Memory context:")
    assert "The user prefers TypeScript for web projects." in system["content"]
    assert user == {"role": "user", "content": "Which language should I use for my web project?"}
    remembered = await asyncio.to_thread(_remembered, stack.ready["gateway"], key, "Use TypeScript with Vite.")
    assert remembered, "the proxied answer became memory"
