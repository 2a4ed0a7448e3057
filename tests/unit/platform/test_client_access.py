"""How the client finds NATS and picks its subjects: credential resolution, roles, and a quick
``Forbidden`` when NATS refuses a publish (all without a server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memoryd.access import Access, Denied, PermissionWatch
from memoryd.credentials import ClientCredentials, read_file, resolve, split_url, write_file
from memoryd.errors import ConfigError, Forbidden


def test_split_url_takes_the_credentials_out_of_every_server() -> None:
    assert split_url("nats://app1:p%40ss@127.0.0.1:4222") == ("nats://127.0.0.1:4222", "app1", "p@ss")
    assert split_url("nats://a:b@h1:1,nats://h2:2") == ("nats://h1:1,nats://h2:2", "a", "b")
    assert split_url("nats://[::1]:4222") == ("nats://[::1]:4222", None, None)


def test_no_argument_reads_the_file_memoryd_up_wrote(tmp_path: Path) -> None:
    write_file(
        tmp_path / "client.json",
        ClientCredentials(url="nats://127.0.0.1:4222", user="client", password="pw", role="application"),
    )
    assert oct((tmp_path / "client.json").stat().st_mode & 0o777) == "0o600"
    creds = resolve(env={"MEMORYD_DATA_DIR": str(tmp_path)})
    assert (creds.url, creds.user, creds.password, creds.role) == (
        "nats://127.0.0.1:4222",
        "client",
        "pw",
        "application",
    )
    assert creds.reply_prefix() == "_INBOX.client"
    # the URL from the environment wins over the file's; the file still gives the user
    moved = resolve(
        env={"MEMORYD_NATS_URL": "nats://10.0.0.1:4222", "MEMORYD_NATS_CREDENTIALS": str(tmp_path / "client.json")}
    )
    assert (moved.url, moved.user, moved.password) == ("nats://10.0.0.1:4222", "client", "pw")


def test_nothing_configured_names_the_settings(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        resolve(env={"MEMORYD_DATA_DIR": str(tmp_path / "none")})
    assert err.value.setting == "MEMORYD_NATS_URL"
    assert "MEMORYD_NATS_CREDENTIALS" in err.value.description and "client.json" in err.value.description
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"bad\.json is not valid"):
        resolve(env={"MEMORYD_NATS_CREDENTIALS": str(tmp_path / "bad.json")})
    with pytest.raises(ConfigError, match="cannot read credentials file"):
        read_file(tmp_path / "missing.json")


def test_roles_from_files_urls_and_arguments(tmp_path: Path) -> None:
    bound = tmp_path / "app1.json"
    bound.write_text(json.dumps({"url": "nats://h:1", "user": "app1", "password": "x", "owners": ["bob", "alice"]}))
    by_file = resolve(credentials=bound)
    assert (by_file.role, by_file.owners, by_file.user) == ("owner-bound", ["bob", "alice"], "app1")
    assert resolve("nats://h:1").role == "application"  # no user: no auth
    assert resolve("nats://client:pw@h:1").role == "application"
    assert resolve("nats://app1:pw@h:1").role is None  # found out from the server's answers
    assert resolve("nats://h:1", user="app", password="pw", owners=["alice"]).role == "owner-bound"
    explicit = resolve("nats://app1:pw@h:1", owners=["alice", "alice"])
    assert explicit.owners == ["alice"] and explicit.password == "pw"


def test_subjects_per_role() -> None:
    app = Access("application")
    assert app.candidates("retrieve", "alice") == [("application", "mem.v1.rpc.retrieve")]
    assert app.candidates(None, "alice") == [("application", "mem.v1.events.chat")]
    bound = Access("owner-bound", ["alice"])
    assert bound.candidates("memory.delete", "alice") == [("owner-bound", "mem.v1.rpc.memory.delete.alice")]
    assert bound.candidates(None, "alice") == [("owner-bound", "mem.v1.events.chat.alice")]
    assert bound.candidates("health", None) == [("application", "mem.v1.rpc.health")]
    unknown = Access(None)
    assert unknown.candidates("inject", "bob") == [
        ("application", "mem.v1.rpc.inject"),
        ("owner-bound", "mem.v1.rpc.inject.bob"),
    ]
    with pytest.raises(Forbidden, match=r"may act only for owners \['alice'\], not 'bob'"):
        bound.check_owner("bob")


async def test_a_refused_publish_is_forbidden_at_once_and_the_working_subject_is_kept() -> None:
    watch = PermissionWatch()
    access = Access(None, user="app1", watch=watch)
    sent: list[str] = []

    async def make(subject: str) -> str:
        sent.append(subject)
        if not subject.endswith(".alice"):
            await watch.on_error(Exception(f'nats: permissions violation for publish to "{subject}"'))
            await asyncio.sleep(30)  # a refused request never gets a reply
        return f"ok {subject}"

    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await access.send("retrieve", "alice", make) == "ok mem.v1.rpc.retrieve.alice"
    assert access.role == "owner-bound" and sent == ["mem.v1.rpc.retrieve", "mem.v1.rpc.retrieve.alice"]
    with pytest.raises(Forbidden, match=r"NATS user app1 may not publish to mem\.v1\.rpc\.retrieve\.bob"):
        await access.send("retrieve", "bob", make)
    assert loop.time() - started < 2


async def test_the_guard_returns_the_result_and_forgets_its_waiters() -> None:
    watch = PermissionWatch()

    async def ok() -> int:
        return 7

    assert await watch.guard("s", ok) == 7
    assert watch._waiters == {}

    async def refused() -> int:
        await watch.on_error(Exception('Permissions Violation for Publish to "s"'))
        await asyncio.sleep(30)
        return 0

    with pytest.raises(Denied) as err:
        await watch.guard("s", refused)
    assert err.value.subject == "s" and watch._waiters == {}


def test_memoryd_up_listens_on_4222_unless_told_otherwise() -> None:
    from memoryd.cli.commands_server import up
    from memoryd.local.up import DEFAULT_NATS_PORT, UpOptions

    assert DEFAULT_NATS_PORT == 4222 and UpOptions(data_dir=Path("d")).nats_port == 4222
    option = next(p for p in up.params if p.name == "nats_port")
    assert option.default == DEFAULT_NATS_PORT


async def test_a_refused_subject_with_capitals_is_denied_though_nats_py_lowercases_the_error() -> None:
    """nats-py lowercases the server's error text: ``retrieve.Ana`` comes back as ``retrieve.ana``."""
    watch = PermissionWatch()

    async def refused() -> int:
        await watch.on_error(Exception('nats: permissions violation for publish to "mem.v1.rpc.retrieve.ana"'))
        await asyncio.sleep(30)
        return 0

    with pytest.raises(Denied) as err:
        await asyncio.wait_for(watch.guard("mem.v1.rpc.retrieve.Ana", refused), timeout=5)
    assert err.value.subject == "mem.v1.rpc.retrieve.Ana" and watch._waiters == {}
