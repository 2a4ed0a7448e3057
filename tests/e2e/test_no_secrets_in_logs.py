"""No log line of a full ``memoryd up`` carries a credential.

The stack runs with every secret it generates (the NATS users' passwords, the PostgreSQL
password, the secrets key) and ones given to it (an LLM API key in the environment, a gateway
API key, embedding and Qdrant API keys set as runtime settings). The test publishes,
retrieves, injects, reads and writes settings, calls the gateway with its key (and with a
wrong one), and makes connections fail with URLs that carry real passwords: the CLI, a
client, and service processes started against a closed NATS port and a closed PostgreSQL
port. Then every line every process wrote (each service's log, nats-server's, PostgreSQL's,
``memoryd up``'s own output, the CLI's and the failed services' output, the errors raised)
is searched for every secret: none is found.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from memoryd import MemoryClient
from memoryd.errors import MemorydError
from memoryd.local.process import free_port
from tests.support.up import clean_env, memoryd_cli, start_up

pytestmark = pytest.mark.slow


def http(url: str, token: str, body: dict[str, object]) -> tuple[int, str]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def run_service(name: str, env: dict[str, str]) -> str:
    """A service process that cannot start (a closed port in a URL with a real password): its output."""
    done = subprocess.run(
        [sys.executable, "-m", f"services.{name}"], capture_output=True, text=True, timeout=60, env=clean_env(**env)
    )
    assert done.returncode == 2, done.stderr[-2000:]
    return done.stdout + done.stderr


async def test_no_log_line_of_a_full_run_carries_a_secret(tmp_path: Path) -> None:
    data = tmp_path / "data"
    llm_key = f"sk-llm-{secrets.token_hex(12)}"
    embed_key, qdrant_key = f"sk-embed-{secrets.token_hex(12)}", f"qd-{secrets.token_hex(12)}"
    closed = free_port()
    up = start_up(
        data,
        env={
            "MEMORYD_LLM_BASE_URL": f"http://127.0.0.1:{closed}/v1",  # every LLM call fails to connect
            "MEMORYD_LLM_MODEL": "m",
            "MEMORYD_LLM_API_KEY": llm_key,
            "MEMORYD_LOG_LEVEL": "debug",
        },
    )
    outputs: list[str] = []
    stopped = False
    try:
        passwords = json.loads((data / "credentials.json").read_text())["passwords"]
        pg_password = (data / "pg-password").read_text().strip()
        secrets_key = (data / "secrets.key").read_text().strip()
        runtime = json.loads((data / "runtime.json").read_text())
        assert pg_password in runtime["pg_dsn"] and pg_password not in up.ready["postgres"]
        env = clean_env(MEMORYD_DATA_DIR=str(data))

        created = memoryd_cli("keys", "create", "--owner", "alice", env=env)
        assert created.returncode == 0, created.stderr
        gateway_key = created.stdout.strip()
        outputs.append(created.stderr)
        for key, value in (("embeddingApiKey", embed_key), ("qdrantApiKey", qdrant_key)):
            done = memoryd_cli("settings", "set", key, value, env=env)
            assert done.returncode == 0 and '"***"' in done.stdout, done.stderr
            outputs += [done.stdout, done.stderr]
        shown = memoryd_cli("settings", "get", "--json", env=env)
        assert shown.returncode == 0, shown.stderr
        outputs += [shown.stdout, shown.stderr]

        memory = await MemoryClient.connect(credentials=str(up.credentials))
        try:
            await memory.publish_chat(
                "alice", [{"role": "user", "content": "I keep my bike in the garage."}], session_id="s1"
            )
            found = await memory.wait_searchable("alice", "bike garage", timeout=90)
            assert any("garage" in m.content for m in found.memories)
            injected = await memory.inject("alice", [{"role": "user", "content": "Where is my bike?"}])
            assert "garage" in injected.messages[0].text
        finally:
            await memory.close()

        gateway = up.ready["gateway"]
        status, body = http(f"{gateway}/v1/search", gateway_key, {"query": "bike"})
        assert status == 200 and "garage" in body, body
        wrong = gateway_key[:-8] + "x" * 8
        status, body = http(f"{gateway}/v1/search", wrong, {"query": "bike"})
        assert status == 401, body

        port = up.nats_port
        bad_cli = memoryd_cli(
            "health", "--nats-url", f"nats://operator:{quote(passwords['operator'])}@127.0.0.1:{closed}", env=env
        )
        assert bad_cli.returncode != 0 and f"127.0.0.1:{closed}" in bad_cli.stderr, bad_cli.stderr
        outputs += [bad_cli.stdout, bad_cli.stderr]
        with pytest.raises(MemorydError) as raised:
            await MemoryClient.connect(f"nats://client:{quote(passwords['client'])}@127.0.0.1:{closed}")
        outputs.append(f"{raised.value!r} {raised.value}")
        outputs.append(
            run_service(
                "extract",
                {"MEMORYD_NATS_URL": f"nats://extract:{quote(passwords['extract'])}@127.0.0.1:{closed}"},
            )
        )
        outputs.append(
            run_service(
                "ingest",
                {
                    "MEMORYD_NATS_URL": f"nats://127.0.0.1:{port}",
                    "MEMORYD_NATS_USER": "ingest",
                    "MEMORYD_NATS_PASSWORD": passwords["ingest"],
                    "MEMORYD_PG_DSN": f"postgresql://postgres:{pg_password}@127.0.0.1:{free_port()}/memoryd",
                    "MEMORYD_PG_CONNECT_TIMEOUT_S": "2",
                    "MEMORYD_SECRETS_KEY": secrets_key,
                },
            )
        )
        await asyncio.sleep(2)  # the LLM calls of extraction fail and are logged
    finally:
        code = up.stop()
        stopped = True
    assert stopped and code == 0

    assert up.proc.stdout is not None and up.proc.stderr is not None
    outputs += [up.proc.stdout.read(), up.proc.stderr.read()]
    files = [*sorted((data / "logs").glob("*.log")), data / "nats" / "nats.log", data / "pg" / "server.log"]
    assert len(files) >= 8 and all(f.stat().st_size > 0 for f in files[:6]), files
    logs = {str(f): f.read_text(errors="replace") for f in files} | {f"output {i}": o for i, o in enumerate(outputs)}
    everything = "\n".join(logs.values())
    assert "cannot connect to NATS at nats://extract:***@127.0.0.1" in everything  # the failing connects were logged

    found: list[str] = []
    generated = {f"NATS password of {u}": p for u, p in passwords.items()}
    generated |= {"PostgreSQL password": pg_password, "secrets key": secrets_key, "gateway key": gateway_key}
    generated |= {"gateway key secret": gateway_key.rsplit("_", 1)[-1], "LLM API key": llm_key}
    generated |= {"embedding API key": embed_key, "Qdrant API key": qdrant_key}
    for what, secret in generated.items():
        for where, text in logs.items():
            for variant in {secret, quote(secret, safe="")}:
                if variant in text:
                    line = next(x for x in text.splitlines() if variant in x)
                    found.append(f"{what} in {where}: {line[:300]}")
    assert found == []
