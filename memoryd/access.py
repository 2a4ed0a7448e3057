"""Which subjects a client uses for an owner, and a quick ``Forbidden`` when NATS refuses one.

An application role publishes to ``mem.v1.events.chat`` and calls ``mem.v1.rpc.<op>``;
an owner-bound user may use only ``mem.v1.events.chat.<owner>`` and
``mem.v1.rpc.<op>.<owner>`` for its owners (``shared/nats_auth.py``). When the role is not
known (a URL alone), the client tries the application subject first and, if NATS refuses
the publish, the owner-bound one, and keeps whichever worked.

NATS answers a refused publish with an asynchronous ``Permissions Violation`` error, not
a reply: ``PermissionWatch`` turns it into ``Forbidden`` at once instead of a request
timing out.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from memoryd.errors import Forbidden
from memoryd.subjects import CHAT_EVENTS, OWNER_BOUND_OPS, owner_events_subject, owner_rpc_subject, rpc_subject

from .credentials import Role

T = TypeVar("T")

_DENIED = re.compile(r'permissions violation for publish to "([^"]+)"', re.IGNORECASE)


class Denied(Exception):
    """NATS refused to let this connection publish to ``subject``."""

    def __init__(self, subject: str) -> None:
        super().__init__(subject)
        self.subject = subject


class _Waiter:
    __slots__ = ("denied", "task")

    def __init__(self, task: asyncio.Task[object] | None) -> None:
        self.task = task
        self.denied = False


class PermissionWatch:
    """Raises ``Denied`` for a call whose subject NATS reports as not permitted.

    The waiting task is cancelled when the error comes (no extra task per call: the guard
    costs a set insertion on the hot path) and the cancellation becomes ``Denied``.
    """

    def __init__(self) -> None:
        self._waiters: dict[str, set[_Waiter]] = {}

    async def on_error(self, exc: Exception) -> None:
        """The connection's error callback."""
        match = _DENIED.search(str(exc))
        if match:
            for waiter in self._waiters.get(match.group(1).lower(), ()):
                if not waiter.denied and waiter.task is not None:
                    waiter.denied = True
                    waiter.task.cancel()

    async def guard(self, subject: str, make: Callable[[], Awaitable[T]]) -> T:
        """``await make()``, or ``Denied`` as soon as NATS refuses ``subject``."""
        waiter = _Waiter(asyncio.current_task())
        key = subject.lower()  # nats-py lowercases the server's error text, subject included
        waiters = self._waiters.setdefault(key, set())
        waiters.add(waiter)
        try:
            return await make()
        except asyncio.CancelledError:
            if waiter.denied and waiter.task is not None and waiter.task.uncancel() == 0:
                raise Denied(subject) from None
            raise  # cancelled by someone else too
        finally:
            waiters.discard(waiter)
            if not waiters:
                self._waiters.pop(key, None)


class Access:
    """The subjects of one connection's role, and the owners it may act for."""

    def __init__(
        self,
        role: Role | None,
        owners: Sequence[str] | None = None,
        user: str | None = None,
        watch: PermissionWatch | None = None,
    ) -> None:
        self.role: Role | None = "owner-bound" if owners is not None else role
        self.owners = frozenset(owners) if owners is not None else None
        self.user = user
        self.watch = watch

    def check_owner(self, owner: str) -> None:
        """``Forbidden`` when this user is bound to owners that do not include ``owner``."""
        if self.owners is not None and owner not in self.owners:
            raise Forbidden(
                f"NATS user {self.user or '?'} may act only for owners {sorted(self.owners)}, not {owner!r}"
            )

    def candidates(self, op: str | None, owner: str | None) -> list[tuple[Role, str]]:
        """Subjects to try in order: ``op`` None means the chat events subject."""
        bindable = owner is not None and (op is None or op in OWNER_BOUND_OPS)
        unbound = CHAT_EVENTS if op is None else rpc_subject(op)
        if not bindable or owner is None:
            return [("application", unbound)]
        bound = owner_events_subject(owner) if op is None else owner_rpc_subject(op, owner)
        if self.role == "application":
            return [("application", unbound)]
        if self.role == "owner-bound":
            return [("owner-bound", bound)]
        return [("application", unbound), ("owner-bound", bound)]

    async def send(self, op: str | None, owner: str | None, make: Callable[[str], Awaitable[T]]) -> T:
        """``make(subject)`` on this role's subject; ``Forbidden`` when NATS refuses every candidate."""
        if owner is not None and self.role == "owner-bound":
            self.check_owner(owner)
        tried: list[str] = []
        for role, subject in self.candidates(op, owner):
            if self.watch is None:
                return await make(subject)
            try:
                result = await self.watch.guard(subject, functools.partial(make, subject))
            except Denied:
                tried.append(subject)
                continue
            if op is None or op in OWNER_BOUND_OPS:
                self.role = role  # this subject shape works for this user: keep it
            return result
        who = f"NATS user {self.user}" if self.user else "this connection"
        raise Forbidden(f"{who} may not publish to {' or '.join(tried)}" + (f" (owner {owner!r})" if owner else ""))
