"""The names of memoryd's services, in start order: one list for the launcher, the NATS users,
the configuration reference and the tests."""

from __future__ import annotations

from typing import Final

SERVICES: Final = ("ingest", "extract", "embed", "retrieve", "sleep", "gateway")
#: The services behind the gateway: they talk to the database, the gateway only to them.
BACKEND_SERVICES: Final = tuple(s for s in SERVICES if s != "gateway")
