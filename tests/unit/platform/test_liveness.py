"""``/livez`` on a service's metrics port: 200 while the event loop beats, 503 with the reason
when the loop is blocked (the metrics thread itself still answers) or NATS is closed."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request
from types import SimpleNamespace
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from shared.observability.endpoint import serve_metrics
from shared.observability.liveness import Liveness


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_state_says_why_it_is_dead() -> None:
    now = [100.0]
    live = Liveness(stale_after_s=10, clock=lambda: now[0])
    assert live.state() == (True, "ok")
    now[0] = 109.0
    assert live.state() == (True, "ok")
    now[0] = 112.5
    assert live.state() == (False, "event loop stuck: no beat for 12.5 s (limit 10 s)")
    live.beat()
    assert live.state() == (True, "ok")
    nc: Any = SimpleNamespace(is_closed=False)
    live.nc = nc
    assert live.state() == (True, "ok")
    nc.is_closed = True
    assert live.state() == (False, "NATS connection closed")


async def test_a_blocked_loop_fails_livez_while_metrics_still_answers() -> None:
    registry = CollectorRegistry()
    Counter("probe_test_total", "a family", registry=registry).inc()
    live = Liveness(stale_after_s=0.4, interval_s=0.05)
    port = serve_metrics("127.0.0.1", 0, registry, live)
    stop = asyncio.Event()
    beating = asyncio.create_task(live.run(stop))
    try:
        await asyncio.sleep(0.1)
        assert await asyncio.to_thread(_get, port, "/livez") == (200, "ok\n")
        seen: dict[str, tuple[int, str]] = {}

        def probe_while_blocked() -> None:
            time.sleep(0.8)
            seen["livez"] = _get(port, "/livez")
            seen["metrics"] = _get(port, "/metrics")

        prober = threading.Thread(target=probe_while_blocked)
        prober.start()
        time.sleep(1.2)  # noqa: ASYNC251 - blocking the loop is the point: no beat
        prober.join()
        code, reason = seen["livez"]
        assert code == 503 and reason.startswith("event loop stuck: no beat for "), seen
        assert seen["metrics"][0] == 200 and "probe_test_total 1.0" in seen["metrics"][1]
        await asyncio.sleep(0.1)  # beating again
        assert await asyncio.to_thread(_get, port, "/livez") == (200, "ok\n")
    finally:
        stop.set()
        await beating
