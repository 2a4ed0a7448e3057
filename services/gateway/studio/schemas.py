"""Replies of the Studio's own routes (``/v1/whoami``, ``/v1/activity``, ``/v1/activity/history``)."""

from __future__ import annotations

from datetime import datetime

import msgspec


class WhoAmI(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The calling API key: an owner key acts for ``owner``; an operator key for any owner."""

    key_id: str
    role: str
    owner: str | None = None
    name: str = ""


class ActivitySample(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Counters that only grow (a restart resets them), sampled now; the page charts their rates.

    ``events``: chat events JetStream accepted (``MEM_EVENTS`` last sequence); ``searches``:
    retrieve and inject requests the retrieve replicas served (``$SRV.STATS``); ``lag``: messages
    waiting per durable consumer (``<name>``) and delivered but unacknowledged (``<name>_ack_pending``).
    """

    at: datetime
    events: int
    searches: int
    lag: dict[str, int] = {}
    errors: dict[str, str] = {}


class ActivityHistory(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The gateway's last hour of ``ActivitySample``, oldest first, one every ``interval_s``."""

    interval_s: float
    samples: list[ActivitySample] = []
