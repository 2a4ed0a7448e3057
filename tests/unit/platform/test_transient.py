"""Which failures the consumer loop retries for as long as they last, and which it dead-letters."""

from __future__ import annotations

import asyncpg
import pytest

from memoryd.errors import DependencyDown, ValidationFailed
from shared.bus.transient import is_transient, transient_sqlstate


@pytest.mark.parametrize(
    "sqlstate",
    ["08000", "08006", "08P01", "25006", "40001", "40P01", "53100", "53200", "53300", "57014", "57P01", "57P03"],
)
def test_transient_sqlstates(sqlstate: str) -> None:
    assert transient_sqlstate(sqlstate)


@pytest.mark.parametrize("sqlstate", ["23505", "22P02", "42P01", "25001", "XX000", None, "", "08"])
def test_permanent_sqlstates(sqlstate: str | None) -> None:
    assert not transient_sqlstate(sqlstate)


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.ReadOnlySQLTransactionError("cannot execute INSERT in a read-only transaction"),
        asyncpg.DiskFullError("could not extend file"),
        asyncpg.OutOfMemoryError("out of memory"),
        asyncpg.TooManyConnectionsError("too many clients"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.CrashShutdownError("crash"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.QueryCanceledError("canceling statement due to statement timeout"),
        asyncpg.PostgresConnectionError("connection failure"),
        asyncpg.DeadlockDetectedError("deadlock"),
        asyncpg.InterfaceError("connection is closed"),
        DependencyDown("postgres: down"),
        ConnectionResetError(),
        TimeoutError(),
        asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
    ],
)
def test_transient_errors(exc: BaseException) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.UniqueViolationError("duplicate key"),
        asyncpg.InvalidTextRepresentationError("invalid input syntax"),
        asyncpg.InternalClientError("unexpected codec state"),
        asyncpg.UndefinedTableError("relation does not exist"),
        ValidationFailed("$.owner: expected str"),
        ValueError("bad"),
        KeyError("x"),
    ],
)
def test_permanent_errors(exc: BaseException) -> None:
    assert not is_transient(exc)


def test_a_wrapped_transient_cause_stays_transient() -> None:
    try:
        try:
            raise asyncpg.ReadOnlySQLTransactionError("read-only")
        except asyncpg.PostgresError as inner:
            raise RuntimeError("store failed") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


def test_an_error_raised_while_handling_a_transient_one_is_judged_by_itself() -> None:
    try:
        try:
            raise TimeoutError
        except TimeoutError:
            raise ValueError("bad payload") from None
    except ValueError as exc:
        assert not is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.CannotConnectNowError("the database system is not yet accepting connections"),
        ConnectionRefusedError(111, "Connect call failed"),
        asyncpg.InterfaceError("connection is closed"),
    ],
)
def test_an_rpc_that_fails_on_a_transient_error_answers_503(exc: BaseException) -> None:
    """PostgreSQL restarting is no internal error: the caller gets dependency_down and may retry."""
    from shared.bus.rpc import error_reply

    reply = error_reply(exc, "retrieve")
    assert (reply.code, reply.err_code, reply.error_id) == (503, "dependency_down", None)


def test_an_rpc_that_fails_on_anything_else_answers_an_opaque_500() -> None:
    from shared.bus.rpc import error_reply

    reply = error_reply(KeyError("a bug"), "retrieve")
    assert (reply.code, reply.err_code, reply.description) == (500, "internal", "internal error")
    assert reply.error_id
