"""Free loopback ports for tests that must pass explicit ones (never a product default).

The ports come from below the kernel's ephemeral range: a port that a test found free there
could be handed out again at once to the next ``bind(0)`` (an embedded NATS or PostgreSQL
picking a free port) before the process under test binds it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_start() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_base(count: int, attempts: int = 200) -> int:
    """A port ``p`` such that ``p .. p + count - 1`` are free on 127.0.0.1 right now."""
    top = min(_ephemeral_start(), 65536) - count
    for _ in range(attempts):
        base = random.randrange(20_000, top)
        if all(_free(base + i) for i in range(count)):
            return base
    raise RuntimeError(f"no {count} consecutive free ports found in {attempts} attempts")
