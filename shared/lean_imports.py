"""Libraries imported without the optional packages they would load for features we do not use.

nats-py imports aiohttp (~14 MB resident) for its WebSocket transport, structlog imports rich
(~8 MB) to render tracebacks, and httpx imports its command line (click, rich, pygments), each
as soon as it is imported. A service connects to NATS over TCP, logs JSON and runs no httpx
command, so ``preload()`` (run by the ``services`` package before any service module) imports
nats-py and structlog with those packages hidden and marks httpx's command-line module as
absent: a service process carries none of them unless it uses one itself (the gateway's chat
proxy imports aiohttp on its own). A ``ws://`` or ``wss://`` NATS URL gets the WebSocket
transport back at connect (``memoryd.connect.websocket_transport``).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator

#: library -> the optional packages it imports that memoryd's services do not use through it
OPTIONAL: dict[str, tuple[str, ...]] = {"nats": ("aiohttp",), "structlog": ("rich",)}
#: modules that serve only a library's command line (its package imports them when it can)
COMMAND_LINES = ("httpx._main",)


@contextlib.contextmanager
def hidden(*names: str) -> Iterator[None]:
    """While the block runs, importing one of ``names`` (not imported yet) raises ImportError,
    as if it were not installed; afterwards it imports normally."""
    blocked = [name for name in names if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]


def preload() -> None:
    """Import each library of ``OPTIONAL`` with its optional packages hidden (a library already
    imported is left as it is), and mark the ``COMMAND_LINES`` modules absent."""
    for name in COMMAND_LINES:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    for library, extras in OPTIONAL.items():
        if library not in sys.modules:
            with hidden(*extras):
                importlib.import_module(library)
