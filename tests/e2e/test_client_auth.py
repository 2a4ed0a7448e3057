"""``MemoryClient`` against ``memoryd up`` with authentication on, as applications use it: the
application role (found through the data dir, no argument) and an owner-bound user (its URL
alone, or its credentials file) publish, retrieve, inject, list and delete; a bound user
acting for another owner gets ``Forbidden`` (403) from NATS's permissions and from the
services' own check."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from memoryd import Forbidden, MemoryClient
from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest
from tests.support.up import RunningUp, clean_env, memoryd_cli

pytestmark = pytest.mark.slow


def _owner(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:8]}"


async def _round_trip(memory: MemoryClient, owner: str) -> None:
    """Publish (a content-part array too), find it, inject it, list it, delete it."""
    await memory.publish_chat(
        owner,
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "My favourite language is TypeScript."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ],
            },
            {"role": "assistant", "content": "Noted: TypeScript."},
        ],
        session_id="s1",
    )
    found = await memory.wait_searchable(owner, "TypeScript", timeout=60)
    assert any("TypeScript" in m.content for m in found.memories)
    hits = await memory.retrieve(owner, "which programming language do I like?")
    assert any("TypeScript" in m.content for m in hits.memories)

    question = [
        {"type": "text", "text": "Which language should I use?"},
        {"type": "image_url", "image_url": {"url": "x"}},
    ]
    injected = await memory.inject(owner, [{"role": "user", "content": question}])
    assert injected.placement == "system"
    assert injected.messages[0].role == "system" and "TypeScript" in injected.messages[0].text
    assert injected.messages[1].content == question  # the request's own parts pass through unchanged

    listed = await memory.list(owner, q="TypeScript")
    user_turn = next(m for m in listed.memories if m.content.startswith("My favourite language"))
    assert user_turn.content == "My favourite language is TypeScript."
    assert user_turn.metadata["content_parts"] == {"image_url": 1}
    deleted = await memory.delete(owner, user_turn.id)
    assert deleted.id == user_turn.id
    after = await memory.list(owner, q="favourite language")
    assert user_turn.id not in {m.id for m in after.memories}


async def test_the_application_role_finds_memoryd_up_with_no_argument(
    stack: RunningUp, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert stack.ready["nats"] == f"nats://127.0.0.1:{stack.nats_port}"
    saved = json.loads(stack.credentials.read_text())
    assert (
        saved["user"] == "client" and saved["url"] == stack.ready["nats"] and saved["inbox_prefix"] == "_INBOX.client"
    )
    assert oct(stack.credentials.stat().st_mode & 0o777) == "0o600"
    for name in ("MEMORYD_NATS_URL", "MEMORYD_NATS_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORYD_DATA_DIR", str(stack.data_dir))
    async with await MemoryClient.connect() as memory:
        assert memory.access.role == "application"
        first, second = _owner("app-a"), _owner("app-b")  # a backend acts for every owner it serves
        await asyncio.gather(_round_trip(memory, first), _round_trip(memory, second))
        health = await memory.health()
        assert health.status == "ok"
        with pytest.raises(Forbidden, match=r"NATS user client may not publish to mem\.v1\.rpc\.engine\.status"):
            await memory.engine_status()  # an operator RPC: refused at once, not a timeout


async def test_credentials_from_the_environment(stack: RunningUp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_DATA_DIR", str(stack.data_dir / "nowhere"))
    monkeypatch.setenv("MEMORYD_NATS_CREDENTIALS", str(stack.credentials))
    monkeypatch.setenv("MEMORYD_NATS_URL", stack.ready["nats"])
    async with await MemoryClient.connect() as memory:
        owner = _owner("env")
        await memory.publish_chat(owner, [{"role": "user", "content": "I water the ferns on Sundays."}])
        assert (await memory.wait_searchable(owner, "ferns", timeout=60)).memories
    saved = json.loads(stack.credentials.read_text())
    url = f"nats://client:{saved['password']}@127.0.0.1:{stack.nats_port}"
    async with await MemoryClient.connect(url) as by_url:
        assert (await by_url.retrieve(owner, "ferns")).memories
    user_pw = await MemoryClient.connect(stack.ready["nats"], user="client", password=saved["password"])
    async with user_pw:
        assert (await user_pw.retrieve(owner, "ferns")).memories


def _add_client(stack: RunningUp, name: str, owner: str) -> str:
    added = memoryd_cli("credentials", "add-client", name, "--owner", owner, "--data-dir", str(stack.data_dir))
    assert added.returncode == 0, added.stderr
    assert "applied to the running nats-server" in added.stderr
    return added.stdout.strip()


async def test_an_owner_bound_user_acts_for_its_owner_only(stack: RunningUp) -> None:
    alice, bob = _owner("alice"), _owner("bob")
    name = f"app{uuid.uuid4().hex[:6]}"
    url = _add_client(stack, name, alice)
    assert url.startswith(f"nats://{name}:") and url.endswith(f"@127.0.0.1:{stack.nats_port}")
    creds_file = stack.data_dir / "clients" / f"{name}.json"
    assert json.loads(creds_file.read_text())["owners"] == [alice]
    await asyncio.sleep(0.5)  # nats-server reloads its configuration asynchronously

    async with await MemoryClient.connect(url) as memory:  # the URL alone: the role is found out
        assert memory.access.role is None
        await _round_trip(memory, alice)
        assert memory.access.role == "owner-bound"
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(Forbidden) as refused:
            await memory.retrieve(bob, "anything")
        assert f"mem.v1.rpc.retrieve.{bob}" in str(refused.value)
        with pytest.raises(Forbidden):
            await memory.publish_chat(bob, [{"role": "user", "content": "not mine"}])
        with pytest.raises(Forbidden):
            await memory.delete(bob, str(uuid.uuid4()))
        assert loop.time() - started < memory.timeout  # refused at once, not timed out
        # the services check the payload against the subject too (403 on the wire)
        with pytest.raises(Forbidden, match=f"acts for owner {alice!r}, not {bob!r}"):
            await call(
                memory.nc, "retrieve", RetrieveRequest(owner=bob, query="x"), subject=f"mem.v1.rpc.retrieve.{alice}"
            )

    async with await MemoryClient.connect(credentials=creds_file) as memory:  # the file names the owners
        assert memory.access.role == "owner-bound"
        await memory.publish_chat(alice, [{"role": "user", "content": "The garage code is 4711."}])
        assert (await memory.wait_searchable(alice, "garage code", timeout=60)).memories
        with pytest.raises(Forbidden, match=rf"only for owners \['{alice}'\], not '{bob}'"):
            await memory.inject(bob, [{"role": "user", "content": "hi"}])
        assert (await memory.list(alice)).total >= 1

    async with await MemoryClient.connect(credentials=stack.credentials) as app:
        assert (await app.retrieve(bob, "TypeScript")).memories == []  # nothing leaked to bob

    removed = memoryd_cli("credentials", "remove-client", name, "--data-dir", str(stack.data_dir), env=clean_env())
    assert removed.returncode == 0 and not creds_file.exists()
