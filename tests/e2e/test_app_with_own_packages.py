"""An application whose own packages are named ``shared`` and ``services`` (common names in web
apps) uses the client against a running ``memoryd up``: ``memoryd`` imports nothing of the server's
packages, so the application's own stay the ones it imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.up import RunningUp, clean_env

pytestmark = pytest.mark.slow

APPLICATION = textwrap.dedent(
    """
    import asyncio, sys

    import services
    import shared
    from memoryd import MemoryClient

    async def main() -> None:
        async with await MemoryClient.connect(credentials=sys.argv[1]) as memory:
            await memory.publish_chat("own-packages", [{"role": "user", "content": "My canoe is a green Wenonah."}])
            found = await memory.wait_searchable("own-packages", "Wenonah", timeout=60)
            print("found:", found.memories[0].content)
        print(shared.OWNER, services.OWNER)

    asyncio.run(main())
    """
)


def test_an_application_with_its_own_shared_and_services_packages(stack: RunningUp, tmp_path: Path) -> None:
    for name in ("shared", "services"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f'OWNER = "the application\'s {name}"\n')
    (tmp_path / "app.py").write_text(APPLICATION)
    result = subprocess.run(
        [sys.executable, "app.py", str(stack.credentials)],
        cwd=tmp_path,
        env=clean_env(PYTHONPATH=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "found: My canoe is a green Wenonah.",
        "the application's shared the application's services",
    ]
