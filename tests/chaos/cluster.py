"""A three-node JetStream cluster on loopback: three ``nats-server`` processes, fixed ports.

Each node keeps its client and route ports across a SIGKILL and restart (the other nodes
and every client find it again at the same address), and its own store directory, so a
restarted node catches up from the others as a real one would.
"""

from __future__ import annotations

from pathlib import Path

from memoryd.local.nats import EmbeddedNats
from memoryd.local.process import free_port

HOST = "127.0.0.1"


class NatsCluster:
    def __init__(self, root: Path, size: int = 3, name: str = "memoryd-test") -> None:
        self.client_ports = [free_port(HOST) for _ in range(size)]
        self.route_ports = [free_port(HOST) for _ in range(size)]
        routes = ", ".join(f"nats-route://{HOST}:{p}" for p in self.route_ports)
        self.nodes = [
            EmbeddedNats(
                root / f"n{i}",
                port=self.client_ports[i],
                extra_config=(
                    f'server_name: "n{i}"\n'
                    f'cluster {{\n  name: "{name}"\n  listen: "{HOST}:{self.route_ports[i]}"\n'
                    f"  routes: [{routes}]\n}}\n"
                ),
            )
            for i in range(size)
        ]

    @property
    def url(self) -> str:
        """Every node's URL, comma-separated (``MEMORYD_NATS_URL``)."""
        return ",".join(f"nats://{HOST}:{p}" for p in self.client_ports)

    def start(self) -> str:
        for node in self.nodes:
            node.start()
        return self.url

    def kill(self, i: int) -> None:
        """SIGKILL node ``i`` (no lame-duck mode, no flush)."""
        self.nodes[i].kill()

    def restart(self, i: int) -> None:
        self.nodes[i].start()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
