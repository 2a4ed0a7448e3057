"""Which failures are transient: retried with backoff for as long as they last, never dead-lettered.

An outage must not throw work away. Transient are NATS and socket errors, timeouts,
``DependencyDown``, PostgreSQL errors whose SQLSTATE blames the database rather than the message
(``transient_sqlstate``), and asyncpg's "another operation is in progress" on a pooled connection
the server's goodbye reached while idle (the server is gone, not the message). Every other
PostgreSQL error is a property of the message and goes to the DLQ after ``max_deliver`` tries.
The cause chain is searched, so a wrapped transient error stays transient.
"""

from __future__ import annotations

import asyncpg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout

from memoryd.errors import DependencyDown

TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    DependencyDown,
    ConnectionError,
    TimeoutError,
    OSError,
    NatsTimeout,
    asyncpg.InterfaceError,  # the connection was closed or the pool is closing
)

#: SQLSTATE classes (first two characters) that are transient as a whole.
TRANSIENT_SQLSTATE_CLASSES: frozenset[str] = frozenset({"08", "53", "57"})
#: Single transient SQLSTATEs outside those classes.
TRANSIENT_SQLSTATES: frozenset[str] = frozenset({"25006", "40001", "40P01"})

_NATS_TRANSIENT_NAMES = frozenset(
    {"ConnectionClosedError", "NoServersError", "StaleConnectionError", "NoRespondersError"}
)


def transient_sqlstate(sqlstate: str | None) -> bool:
    """True when a PostgreSQL error code names a condition that goes away by itself.

    Classes 08 (connection exception), 53 (insufficient resources) and 57 (operator
    intervention, statement timeout included), and 25006 (read-only transaction: a standby
    after a failover), 40001 and 40P01 (serialization failure, deadlock: retry is the remedy).
    """
    if not sqlstate or len(sqlstate) != 5:
        return False
    return sqlstate[:2] in TRANSIENT_SQLSTATE_CLASSES or sqlstate in TRANSIENT_SQLSTATES


#: What asyncpg says when a query is sent on a connection still consuming a server error.
_DEAD_CONNECTION = "another operation"


def _transient_one(exc: BaseException) -> bool:
    if isinstance(exc, TRANSIENT_TYPES):
        return True
    if isinstance(exc, asyncpg.InternalClientError):
        return _DEAD_CONNECTION in str(exc)
    if isinstance(exc, asyncpg.PostgresError):
        return transient_sqlstate(getattr(exc, "sqlstate", None))
    return isinstance(exc, NatsError) and type(exc).__name__ in _NATS_TRANSIENT_NAMES


def is_transient(exc: BaseException) -> bool:
    """``exc`` or anything in its ``raise ... from`` chain is transient (see the module docstring)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if _transient_one(current):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False
