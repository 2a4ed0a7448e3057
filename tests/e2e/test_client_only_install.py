"""An application installs the client alone: a fresh venv with only the base install
(``pip install <repo>``, no extras) has none of the server's dependencies, and from it an
application publishes an event and retrieves it through a running ``memoryd up``."""

from __future__ import annotations

import subprocess
import textwrap
import venv
from pathlib import Path

import pytest

from tests.support.up import RunningUp, clean_env
from tests.unit.test_boundaries import SERVER_ONLY

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

APPLICATION = textwrap.dedent(
    """
    import asyncio, sys

    from memoryd import MemoryClient

    async def main() -> None:
        async with await MemoryClient.connect(credentials=sys.argv[1]) as memory:
            await memory.publish_chat("solo", [{"role": "user", "content": "My bike is a green Brompton."}])
            found = await memory.wait_searchable("solo", "Brompton", timeout=60)
            print("found:", found.memories[0].content)

    asyncio.run(main())
    """
)


def test_a_base_install_is_a_working_client(stack: RunningUp, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(PIP_NO_INPUT="1"),
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    missing = [
        m
        for m in SERVER_ONLY
        if subprocess.run([str(python), "-c", f"import {m}"], capture_output=True, env=clean_env()).returncode == 0
    ]
    assert missing == [], f"the base install brought server dependencies: {missing}"

    script = tmp_path / "app.py"
    script.write_text(APPLICATION)
    result = subprocess.run(
        [str(python), str(script), str(stack.credentials)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=clean_env(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "found: My bike is a green Brompton." in result.stdout
