"""Each service's own HTTP endpoint, in a thread beside its event loop: ``/metrics`` and ``/livez``.

``/livez`` answers from this thread what ``Liveness`` knows (200 ``ok``, or 503 with the
reason), so a process whose loop is stuck stops passing its probe even though ``/metrics``,
served by the same thread, would still answer. Port 0 picks a free port, reported back.
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from memoryd.errors import ConfigError

from .liveness import Liveness

LIVEZ = "/livez"
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scrape in flight never holds the process at exit


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # every scrape would be a line on stderr
        pass


def livez_app(liveness: Liveness, metrics: WsgiApp) -> WsgiApp:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != LIVEZ:
            return metrics(environ, start_response)
        alive, reason = liveness.state()
        start_response("200 OK" if alive else "503 Service Unavailable", [("Content-Type", "text/plain")])
        return [reason.encode() + b"\n"]

    return app


def serve_metrics(host: str, port: int, registry: CollectorRegistry, liveness: Liveness | None = None) -> int:
    """Serve ``registry`` on ``/metrics`` (and ``liveness`` on ``/livez``); return the bound port."""
    app: WsgiApp = make_wsgi_app(registry)
    if liveness is not None:
        app = livez_app(liveness, app)

    server_class: type[_Server] = _Server6 if ":" in host else _Server
    try:
        httpd: WSGIServer = make_server(host, port, app, server_class, handler_class=_Quiet)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError("MEMORYD_METRICS_PORT", f"port {port} on {host} is already in use") from exc
        raise ConfigError("MEMORYD_METRICS_HOST", f"cannot listen on {host}:{port}: {exc}") from exc
    threading.Thread(target=httpd.serve_forever, name="metrics-http", daemon=True).start()
    return int(httpd.server_port)
