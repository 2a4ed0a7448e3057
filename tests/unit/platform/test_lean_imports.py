"""``shared.lean_imports``: optional packages hidden while a library is imported, back afterwards,
and nats-py's WebSocket transport restored for a ``ws://`` URL."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from shared.lean_imports import hidden


def test_a_hidden_package_fails_to_import_only_inside_the_block() -> None:
    name = "lean_imports_probe_pkg"  # never installed: hiding it must not make it importable either
    with hidden("json", name):  # json is imported already: left alone
        assert importlib.import_module("json")
        with pytest.raises(ImportError):
            importlib.import_module(name)
    assert name not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)


def test_services_load_nats_and_structlog_without_their_extras_which_stay_importable() -> None:
    code = (
        "import sys, services, structlog.tracebacks as tb, nats.aio.transport as tr, httpx;"
        "import rich, aiohttp;"  # still importable afterwards
        "print(tb.rich is None, tr.aiohttp is None, httpx.main.__module__ == 'httpx')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True"]


def test_a_websocket_url_gets_the_transport_back() -> None:
    code = (
        "import services, nats.aio.transport as tr\n"
        "from memoryd.connect import websocket_transport\n"
        "websocket_transport('nats://a:4222'); print(tr.aiohttp is None)\n"
        "websocket_transport('nats://a:4222, WSS://b:443'); print(tr.aiohttp is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]
