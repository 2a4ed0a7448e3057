"""Which failures are transient: retried with backoff for as long as they last, never dead-lettered.

An outage must not throw work away. Transient are: NATS and socket errors, timeouts,
``DependencyDown``, and PostgreSQL errors whose SQLSTATE says the database, not the
message, is the problem:

    08xxx  connection exception (the server went away, refused, failover in progress)
    25006  read_only_sql_transaction (a standby after a failover, or read-only for maintenance)
    40001  serialization_failure, 40P01 deadlock_detected (retry is the documented remedy)
    53xxx  insufficient resources (disk full, out of memory, too many connections)
    57xxx  operator intervention (admin shutdown, crash shutdown, cannot connect now,
           query canceled by the operator or a statement timeout)

A pooled connection that PostgreSQL's goodbye reached while it sat idle (the postmaster was
killed, the server is shutting down) can be handed out again in the moment before its
socket closes: the next query on it fails in asyncpg with "cannot switch to state ...;
another operation ... is in progress". The server is gone, not the message: transient too.

Every other PostgreSQL error (a constraint the data breaks, a bad value) is a property of
the message and goes to the DLQ after ``max_deliver`` tries. The cause chain is searched,
so an adapter that wraps a transient error in its own exception keeps it transient.
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
    """True when a PostgreSQL error code names a condition that goes away by itself."""
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
