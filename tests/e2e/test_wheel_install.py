"""memoryd as a stranger installs it: the wheel and the sdist built from this tree, the wheel
installed into fresh virtual environments outside the source tree, and run from there.

With the ``server`` extra, ``memoryd up`` starts on a new data dir, a chat event published over
HTTP is found by a search through the gateway, Memory Studio's files are served from the
install, and Ctrl-C stops it with exit 0. With the base install alone, an application
publishes and retrieves through a running stack, ``memoryd --help`` works, and ``memoryd up``
says which extra to install. Each environment is made once per test session.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.error
import urllib.request
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.up import RunningUp, clean_env, memoryd_cli, start_up
from tests.unit.test_boundaries import SERVER_ONLY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memoryd", "shared", "services")
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
#: the environment of every process run from an install: no ``MEMORYD_*``, and nothing on the
#: path from the source tree (an empty ``PYTHONPATH`` is unset for Python)
INSTALLED = {"PYTHONPATH": "", "PIP_NO_INPUT": "1"}
#: what a clean clone lacks: a stale ``*.egg-info`` would hand its old file list to the build
NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".memoryd", ".*_cache", "node_modules"
)


@dataclass(frozen=True)
class Dists:
    wheel: Path
    sdist: Path


@dataclass(frozen=True)
class Install:
    """A virtual environment with memoryd installed, and a working directory outside the tree."""

    root: Path
    cwd: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def memoryd(self) -> Path:
        return self.root / "bin" / "memoryd"

    def run(self, *argv: str | Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.cwd,
            env=clean_env(**INSTALLED, **env),
        )


def make_install(where: Path, requirement: str) -> Install:
    """A fresh venv at ``where``/venv with ``requirement`` installed (pip's cache is used)."""
    cwd = where / "work"
    cwd.mkdir(parents=True)
    env = Install(where / "venv", cwd)
    venv.create(env.root, with_pip=True)
    done = env.run(env.python, "-m", "pip", "install", "--quiet", requirement, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    return env


def package_files() -> list[str]:
    """Every file beside the code in the installed packages, as a path inside the wheel."""
    return sorted(
        str(path.relative_to(ROOT))
        for top in PACKAGES
        for path in (ROOT / top).rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    )


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist, and the wheel built from it, of a copy of this tree as a clone has it."""
    out, source = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("source") / "memoryd"
    shutil.copytree(ROOT, source, ignore=NOT_IN_A_CLONE)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=out,
        env=clean_env(**INSTALLED),
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (wheel,) = out.glob(f"memoryd-{VERSION}-py3-none-any.whl")
    (sdist,) = out.glob(f"memoryd-{VERSION}.tar.gz")
    return Dists(wheel, sdist)


@pytest.fixture(scope="module")
def server_install(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Install:
    return make_install(tmp_path_factory.mktemp("server"), f"{dists.wheel}[server]")


@pytest.fixture(scope="module")
def base_install(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Install:
    return make_install(tmp_path_factory.mktemp("base"), str(dists.wheel))


def test_the_wheel_carries_every_file_the_packages_read(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"memoryd-{VERSION}.dist-info/METADATA").decode()
    expected = package_files()
    assert {"memoryd/py.typed", "services/embed/assets/tokenizer.json", "services/gateway/assets/docs.html"} <= set(
        expected
    )
    assert any(name.startswith("shared/db/migrations/") and name.endswith(".sql") for name in expected)
    assert [f for f in expected if f not in names] == []
    assert f"memoryd-{VERSION}.dist-info/licenses/LICENSE" in names
    assert not any(name.startswith(("tests/", "bench/")) for name in names)
    assert "License-Expression: Apache-2.0" in metadata and f"Version: {VERSION}" in metadata
    assert "Provides-Extra: server" in metadata and "Classifier: Typing :: Typed" in metadata


def test_the_sdist_holds_the_license_and_the_packages_files(dists: Dists) -> None:
    prefix = f"memoryd-{VERSION}/"
    with tarfile.open(dists.sdist) as sdist:
        names = {name.removeprefix(prefix) for name in sdist.getnames()}
        license_text = sdist.extractfile(prefix + "LICENSE")
        assert license_text is not None
        assert license_text.read() == (ROOT / "LICENSE").read_bytes()
    assert {"LICENSE", "README.md", "pyproject.toml"} <= names
    assert [f for f in package_files() if f not in names] == []


def test_python_dash_m_memoryd_is_the_command_line() -> None:
    """In the development environment too: ``python -m memoryd`` is ``memoryd``."""
    env = clean_env()
    help_text = subprocess.run([sys.executable, "-m", "memoryd", "--help"], capture_output=True, text=True, env=env)
    assert help_text.returncode == 0, help_text.stderr
    assert help_text.stdout.startswith("Usage: memoryd ") and "\n  up " in help_text.stdout
    shown = subprocess.run([sys.executable, "-m", "memoryd", "--version"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0 and shown.stdout == f"memoryd {VERSION}\n", shown.stderr


def _http(url: str, key: str | None = None, body: object = None) -> tuple[int, str, bytes]:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers=headers, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers.get("content-type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), exc.read()


def _search_until(gateway: str, key: str, query: str, wanted: str, timeout: float = 120) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout
    while True:
        status, _, body = _http(f"{gateway}/v1/search", key, {"query": query})
        assert status == 200, body[:2000]
        memories: list[dict[str, object]] = json.loads(body)["memories"]
        if any(wanted in str(m["content"]) for m in memories) or time.monotonic() > deadline:
            return memories
        time.sleep(0.5)


def test_the_server_install_runs_memoryd_up(server_install: Install, tmp_path: Path) -> None:
    env = server_install
    where = env.run(env.python, "-c", "import memoryd, services, shared; print(memoryd.__file__, services.__file__)")
    assert where.returncode == 0, where.stderr
    assert all(Path(p).is_relative_to(env.root) for p in where.stdout.split()), where.stdout  # not the source tree
    shown = env.run(env.memoryd, "--version")
    metadata = env.run(env.python, "-c", "import importlib.metadata as m; print(m.version('memoryd'))")
    assert shown.stdout == f"memoryd {VERSION}\n" and metadata.stdout == f"{VERSION}\n", shown.stderr + metadata.stderr

    data = tmp_path / "data"
    up: RunningUp = start_up(data, command=[str(env.memoryd)], cwd=env.cwd, env=INSTALLED, timeout=600)
    stopped = False
    try:
        gateway = up.ready["gateway"]
        created = env.run(env.memoryd, "keys", "create", "--owner", "stranger", MEMORYD_DATA_DIR=str(data))
        assert created.returncode == 0, created.stderr
        key = created.stdout.strip()

        said = "My bike is a green Brompton."
        status, _, body = _http(f"{gateway}/v1/events", key, {"messages": [{"role": "user", "content": said}]})
        assert status == 202, body[:2000]
        found = _search_until(gateway, key, "Brompton bike", said)
        assert said in [m["content"] for m in found], found

        status, kind, page = _http(f"{gateway}/studio/")
        assert status == 200 and kind.startswith("text/html") and b'src="js/app.js"' in page, page[:500]
        static = ROOT / "services" / "gateway" / "studio" / "static"
        for asset in sorted(p for p in static.rglob("*") if p.is_file()):
            status, _, served = _http(f"{gateway}/studio/{asset.relative_to(static)}")
            assert (status, served) == (200, asset.read_bytes()), asset
        status, kind, docs = _http(f"{gateway}/docs")
        assert (status, docs) == (200, (ROOT / "services/gateway/assets/docs.html").read_bytes()), docs[:300]
        status, _, openapi = _http(f"{gateway}/openapi.json")
        assert status == 200 and json.loads(openapi)["info"]["version"] == VERSION
        health = env.run(env.memoryd, "health", "retrieve", "--json", MEMORYD_DATA_DIR=str(data))
        assert health.returncode == 0 and json.loads(health.stdout)["version"] == VERSION, health.stderr

        stopped = True
        assert up.stop() == 0
    finally:
        if not stopped:
            up.proc.kill()
            up.proc.wait()


APPLICATION = """
import asyncio, sys

from memoryd import MemoryClient

async def main() -> None:
    async with await MemoryClient.connect(credentials=sys.argv[1]) as memory:
        await memory.publish_chat("solo", [{"role": "user", "content": "My kayak is a red Prijon."}])
        found = await memory.wait_searchable("solo", "Prijon", timeout=60)
        print("found:", found.memories[0].content)

asyncio.run(main())
"""


HTTP_APPLICATION = """
import sys

from memoryd import Memory

with Memory(sys.argv[1], sys.argv[2]) as memory:
    added = memory.add(
        [{"role": "user", "content": "My tent is a yellow Hilleberg."}],
        metadata={"project": "trip"},
        agent_id="outdoor",
        timeout=90,
    )
    turn = next(m for m in added.memories if m.source == "chat_turn")
    print("added:", turn.content, "by", turn.agent_id)
    other = memory.add("My tent pegs are titanium.", metadata={"project": "trip"}, agent_id="shopping", timeout=90)
    hits = memory.search("tent Hilleberg", filters={"project": "trip"}, threshold=0.3)
    print("found:", hits[0].content)
    mine = memory.search("tent", agent_id="outdoor", filters={"project": "trip"})
    print("agent outdoor:", sorted({h.agent_id for h in mine}), turn.id in [h.id for h in mine])
    print("both agents:", sorted({h.agent_id for h in memory.search("tent", filters={"project": "trip"})}))
    print("deleted shopping:", memory.delete_all(agent_id="shopping").count == len(other.memories))
    print("unrelated:", len(memory.search("quarterly tax filing deadline", threshold=0.3)))
    print("other project:", len(memory.search("tent Hilleberg", filters={"project": "work"})))
    memory.update(turn.id, "My tent is a green Hilleberg.")
    print("history:", " -> ".join([memory.history(turn.id)[0].old_content, memory.history(turn.id)[-1].new_content]))
    print("deleted:", memory.delete(turn.id).removed.rows)
"""


def test_the_base_install_is_a_client_without_the_server(base_install: Install, stack: RunningUp) -> None:
    env = base_install
    where = env.run(env.python, "-c", "import memoryd; print(memoryd.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(env.root), where.stdout + where.stderr  # not the source tree
    present = [m for m in SERVER_ONLY if env.run(env.python, "-c", f"import {m}", timeout=60).returncode == 0]
    assert present == [], f"the base install brought server dependencies: {present}"

    imported = env.run(env.python, "-c", "from memoryd import MemoryClient; print(MemoryClient.__module__)")
    assert (imported.returncode, imported.stdout) == (0, "memoryd.client\n"), imported.stderr
    helped = env.run(env.memoryd, "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: memoryd "), helped.stderr
    assert env.run(env.python, "-m", "memoryd", "--version").stdout == f"memoryd {VERSION}\n"

    refused = env.run(env.memoryd, "up", "--data-dir", str(env.cwd / "data"))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "install it with: pip install 'memoryd[server]'" in refused.stderr, refused.stderr
    assert not (env.cwd / "data").exists()

    script = env.cwd / "app.py"
    script.write_text(APPLICATION)
    result = env.run(env.python, script, stack.credentials)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == "found: My kayak is a red Prijon.\n"

    key = memoryd_cli("keys", "create", "--owner", "base-http", env=clean_env(MEMORYD_DATA_DIR=str(stack.data_dir)))
    assert key.returncode == 0, key.stderr
    http_app = env.cwd / "http_app.py"
    http_app.write_text(HTTP_APPLICATION)
    over_http = env.run(env.python, http_app, stack.ready["gateway"], key.stdout.strip())
    assert over_http.returncode == 0, over_http.stderr[-3000:]
    assert over_http.stdout.splitlines() == [
        "added: My tent is a yellow Hilleberg. by outdoor",
        "found: My tent is a yellow Hilleberg.",
        "agent outdoor: ['outdoor'] True",
        "both agents: ['outdoor', 'shopping']",
        "deleted shopping: True",
        "unrelated: 0",
        "other project: 0",
        "history: My tent is a yellow Hilleberg. -> My tent is a green Hilleberg.",
        "deleted: 1",
    ]
