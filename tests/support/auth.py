"""nats-server with authentication on, as ``memoryd up`` runs it, for integration tests.

``start_auth_bus`` makes the credentials (``shared.nats_auth.Credentials``) and the owner-bound
client users a test asks for, writes ``auth.conf`` with ``memoryd up``'s own
``write_nats_auth`` and starts the embedded nats-server with it. ``run_as_roles`` runs
in-process services each as its own NATS user (its role's permissions, as under
``memoryd up``); ``connect_as`` and ``client_as`` connect a test as any user.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from memoryd.local.up import credentials_file, nats_dir, write_nats_auth
from shared.nats_auth import Credentials
from shared.service import ServiceContext
from shared.settings.env import NatsConfig, ServiceConfig
from tests.support.stack import run_services, service_config


@dataclass
class AuthBus:
    """A running nats-server with ``memoryd up``'s users and permissions."""

    server: EmbeddedNats
    creds: Credentials

    @property
    def url(self) -> str:
        return self.server.url

    def config(self, user: str, pg_dsn: str, extra: Mapping[str, str] | None = None) -> ServiceConfig:
        """A service's configuration connecting as ``user``."""
        auth = {"MEMORYD_NATS_USER": user, "MEMORYD_NATS_PASSWORD": self.creds.passwords[user]}
        return service_config(self.url, pg_dsn, {**auth, **(extra or {})})

    async def connect_as(self, user: str, name: str | None = None) -> Client:
        """A raw NATS connection as ``user`` (its inbox prefix ``_INBOX.<user>``)."""
        cfg = NatsConfig(url=self.url, user=user, password=self.creds.passwords[user])
        return await connect(cfg, name or f"test-{user}", reconnect_forever=False)

    async def client_as(self, user: str, owners: Sequence[str] | None = None) -> MemoryClient:
        """``MemoryClient`` as ``user``; ``owners`` defaults to the owners the user is bound to
        (``None``: the application role). Another list makes a client that claims owners."""
        bound = owners if owners is not None else self.creds.bound_owners.get(user)
        return await MemoryClient.connect(
            self.url, user=user, password=self.creds.passwords[user], owners=bound, name=f"test-{user}"
        )


def start_auth_bus(data_dir: Path, bound: Mapping[str, Sequence[str]] | None = None) -> AuthBus:
    """Credentials (plus owner-bound ``user -> owners``), ``auth.conf`` and a started server."""
    creds = Credentials.load_or_create(credentials_file(data_dir))
    for user, owners in (bound or {}).items():
        creds.add_bound_client(user, list(owners))
    creds.save(credentials_file(data_dir))
    server = EmbeddedNats(nats_dir(data_dir), extra_config=write_nats_auth(data_dir, creds))
    server.start()
    return AuthBus(server=server, creds=creds)


@contextlib.asynccontextmanager
async def run_as_roles(
    names: Sequence[str],
    bus: AuthBus,
    pg_dsn: str,
    extra: Mapping[str, str] | None = None,
    *,
    timeout: float = 120.0,
) -> AsyncIterator[dict[str, ServiceContext]]:
    """``run_services`` with each service connected as its own NATS user (``timeout`` for each
    to get ready: loading the embedding model on a loaded runner takes a while)."""
    contexts: dict[str, ServiceContext] = {}
    async with contextlib.AsyncExitStack() as stack:
        for name in names:
            config = bus.config(name, pg_dsn, extra)
            contexts |= await stack.enter_async_context(run_services([name], config, timeout=timeout))
        yield contexts
