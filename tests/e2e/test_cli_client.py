"""The client CLI against `memoryd up`, as a user runs it: chat -> memories list -> export ->
import -> delete, NATS found through the data dir's runtime.json, errors as one line and exit 1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import psutil
import pytest

from memoryd.local.process import free_port

MEMORYD = [sys.executable, "-m", "memoryd.cli.main"]
pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}


def _cli(data: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMORYD, *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        input=stdin,
    )


def _ok(data: Path, *args: str, stdin: str | None = None) -> str:
    result = _cli(data, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _wait_listed(data: Path, owner: str, n: int, timeout: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        listed = json.loads(_ok(data, "memories", "list", "--owner", owner, "--json"))
        if listed["total"] >= n or time.monotonic() > deadline:
            return listed  # type: ignore[no-any-return]
        time.sleep(0.3)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    data = tmp_path_factory.mktemp("cli") / "data"
    proc = subprocess.Popen(
        [
            *MEMORYD,
            "up",
            "--data-dir",
            str(data),
            "--nats-port",
            str(free_port()),
            "--metrics-port",
            "0",
            "--gateway-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    children: list[psutil.Process] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"memoryd up exited: {proc.stderr.read() if proc.stderr else ''}")
            if line.startswith("memoryd ready "):
                break
        children = psutil.Process(proc.pid).children(recursive=True)
        yield data
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        psutil.wait_procs(children, timeout=10)


def test_chat_list_export_import_delete(running: Path, tmp_path: Path) -> None:
    data, owner = running, f"cli-{os.getpid()}"
    out = _ok(data, "chat", "--owner", owner, "--session", "s1", "hello from the cli test")
    assert out.startswith("published chat event ") and owner in out
    sent = json.loads(_ok(data, "chat", "--owner", owner, "--role", "assistant", "--json", "an answer from the cli"))
    assert sent["owner"] == owner and sent["event_id"]

    listed = _wait_listed(data, owner, 2)
    contents = sorted(m["content"] for m in listed["memories"])  # type: ignore[attr-defined]
    assert contents == ["an answer from the cli", "hello from the cli test"]
    human = _ok(data, "memories", "list", "--owner", owner)
    assert "hello from the cli test" in human and "2 of 2 memories" in human
    assert "hello from the cli" in _ok(data, "memories", "list", "--owner", owner, "-q", "hello")

    added = json.loads(_ok(data, "memories", "add", "--owner", owner, "--key", "pref:cli", "--json", "User likes CLIs"))
    mid = added["memory"]["id"]
    assert added["created"] is True
    shown = _ok(data, "memories", "get", "--owner", owner, mid)
    assert "User likes CLIs" in shown and "pref:cli" in shown

    dump = tmp_path / "dump.jsonl"
    _ok(data, "memories", "export", "--owner", owner, "--out", str(dump))
    lines = dump.read_text().splitlines()
    assert len(lines) == 3 and {json.loads(line)["owner"] for line in lines} == {owner}
    assert _ok(data, "memories", "export", "--owner", owner).splitlines() == lines

    copy = f"{owner}-copy"
    report = _ok(data, "memories", "import", "--owner", copy, str(dump))
    assert "imported 3, updated 0, unchanged 0" in report
    again = json.loads(_ok(data, "memories", "import", "--owner", copy, "--json", stdin=dump.read_text()))
    assert (again["imported"], again["unchanged"]) == (0, 3)
    bad = _cli(data, "memories", "import", "--owner", copy, stdin=lines[0] + "\n{oops\n")
    assert bad.returncode == 1 and "line 2:" in bad.stderr

    deleted = _ok(data, "memories", "delete", "--owner", owner, mid)
    assert deleted.startswith(f"deleted {mid}: rows=1")
    missing = _cli(data, "memories", "get", "--owner", owner, mid)
    assert missing.returncode == 1
    assert missing.stderr.startswith("memoryd: not_found: ") and "Traceback" not in missing.stderr
    assert json.loads(_ok(data, "memories", "list", "--owner", owner, "--json"))["total"] == 2


def test_errors_are_one_line(running: Path, tmp_path: Path) -> None:
    bad_type = _cli(running, "memories", "add", "--owner", "x", "--expires-at", "2001-01-01T00:00:00+00:00", "text")
    assert bad_type.returncode == 1 and bad_type.stderr.startswith("memoryd: validation: ")
    assert "expires_at" in bad_type.stderr
    blank = _cli(running, "chat", "--owner", "x", "   ")
    assert blank.returncode == 1 and blank.stderr.startswith("memoryd: validation: ")
    nowhere = subprocess.run(
        [*MEMORYD, "memories", "list", "--owner", "x", "--data-dir", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert nowhere.returncode == 2 and "runtime.json" in nowhere.stderr and "Traceback" not in nowhere.stderr


def _mem0_export(alice: str, bob: str) -> dict[str, object]:
    """A mem0 ``get_all`` answer, as mem0 writes it (Pacific timestamps, null metadata)."""
    return {
        "results": [
            {
                "id": "0b9e2c2a-3f1e-4c59-9a38-2a1f7e1b6c11",
                "memory": "Prefers green tea in the morning",
                "hash": "c3f1b0c8d2e4a6f8b0c2d4e6f8a0b2c4",
                "metadata": {"category": "food"},
                "created_at": "2024-07-20T01:23:45.678901-07:00",
                "updated_at": "2024-07-21T09:00:00-07:00",
                "user_id": alice,
                "agent_id": "travel-bot",
                "run_id": "trip-42",
            },
            {
                "id": "mem-2",
                "memory": "Is allergic to peanuts",
                "hash": "a1",
                "metadata": None,
                "created_at": "2024-07-22T10:00:00-07:00",
                "updated_at": None,
                "user_id": alice,
            },
            {
                "id": "5d1c7b8e-0f43-4f7a-b1d2-9e3c4a5b6d7e",
                "memory": "Lives in Lisbon",
                "hash": "b2",
                "metadata": {},
                "created_at": "2024-07-23T10:00:00-07:00",
                "updated_at": None,
                "user_id": bob,
            },
        ]
    }


def test_import_from_mem0(running: Path, tmp_path: Path) -> None:
    alice, bob = f"mem0-alice-{os.getpid()}", f"mem0-bob-{os.getpid()}"
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps(_mem0_export(alice, bob)))
    first = json.loads(_ok(running, "memories", "import", "--from", "mem0", "--json", str(export)))
    assert (first["imported"], first["updated"], first["unchanged"]) == (3, 0, 0)

    listed = json.loads(_ok(running, "memories", "list", "--owner", alice, "--json"))
    by_key = {m["key"]: m for m in listed["memories"]}
    assert set(by_key) == {"mem0:0b9e2c2a-3f1e-4c59-9a38-2a1f7e1b6c11", "mem0:mem-2"}
    tea = by_key["mem0:0b9e2c2a-3f1e-4c59-9a38-2a1f7e1b6c11"]
    assert tea["id"] == "0b9e2c2a-3f1e-4c59-9a38-2a1f7e1b6c11"  # mem0's id is kept
    assert (tea["content"], tea["session_id"], tea["source"]) == (
        "Prefers green tea in the morning",
        "trip-42",
        "import",
    )
    assert (tea["metadata"], tea["agent_id"]) == ({"category": "food"}, "travel-bot")  # the column, not metadata
    assert datetime.fromisoformat(tea["created_at"]) == datetime.fromisoformat("2024-07-20T01:23:45.678901-07:00")
    peanuts = by_key["mem0:mem-2"]
    assert peanuts["content"] == "Is allergic to peanuts" and peanuts.get("metadata", {}) == {}
    assert "session_id" not in peanuts
    by_agent = json.loads(_ok(running, "memories", "list", "--owner", alice, "--agent", "travel-bot", "--json"))
    assert [m["id"] for m in by_agent["memories"]] == [tea["id"]]
    (lisbon,) = json.loads(_ok(running, "memories", "list", "--owner", bob, "--json"))["memories"]
    assert (lisbon["content"], lisbon["owner"]) == ("Lives in Lisbon", bob)

    again = _ok(running, "memories", "import", "--from", "mem0", str(export))
    assert "imported 0, updated 0, unchanged 3" in again
    assert json.loads(_ok(running, "memories", "list", "--owner", alice, "--json"))["total"] == 2

    # into one named owner; a bad entry imports nothing and names the entry
    carol = f"mem0-carol-{os.getpid()}"
    one = json.loads(_ok(running, "memories", "import", "--from", "mem0", "--owner", carol, "--json", str(export)))
    assert one["imported"] == 3
    bad = _mem0_export("has.dots", bob)
    bad["results"].insert(1, {"id": "x", "memory": 7})  # type: ignore[attr-defined]
    refused = _cli(running, "memories", "import", "--from", "mem0", stdin=json.dumps(bad))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "entry 1: 'has.dots' cannot be an owner" in refused.stderr and "entry 2: Expected `str`" in refused.stderr
    assert json.loads(_ok(running, "memories", "list", "--owner", bob, "--json"))["total"] == 1
    no_owner = _cli(running, "memories", "import", str(export))
    assert no_owner.returncode == 2 and "--owner" in no_owner.stderr


def test_agent_options(running: Path) -> None:
    owner = f"agents-{os.getpid()}"
    for agent, text in (("coder", "Writes Go services at work"), ("travel", "Books aisle seats on trains")):
        _ok(running, "memories", "add", text, "--owner", owner, "--agent", agent)
    coder = json.loads(_ok(running, "memories", "list", "--owner", owner, "--agent", "coder", "--json"))
    assert [(m["content"], m["agent_id"]) for m in coder["memories"]] == [("Writes Go services at work", "coder")]
    found = json.loads(_ok(running, "search", "Go services seats", "--owner", owner, "--agent", "travel", "--json"))
    assert [m["content"] for m in found["memories"]] == ["Books aisle seats on trains"]
    cleared = json.loads(_ok(running, "memories", "clear", "--owner", owner, "--agent", "coder", "--yes", "--json"))
    assert cleared["count"] == 1
    left = json.loads(_ok(running, "memories", "list", "--owner", owner, "--json"))
    assert [m["agent_id"] for m in left["memories"]] == ["travel"]
