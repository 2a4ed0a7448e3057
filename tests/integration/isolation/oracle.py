"""The write-isolation oracle: what every memory row should be after a sequence of operations.

Pure bookkeeping, no I/O. Each row is known by its id and by the one canary its text carries;
``expect_*`` say what a client (``operator=False``) or the operator may do to a row and apply
the change when it is allowed, or return the error the services must answer. Global rows
come only from the operator's writes: a client's write can never make or change one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import msgspec

from memoryd.errors import Conflict, Forbidden, MemorydError, NotFound
from services.ingest.logic.imports import import_id

from .helpers import CANARY

Refusal = type[MemorydError] | None


@dataclass
class Row:
    id: str
    owner: str
    canary: str
    state: str = "active"
    scope: str = "apiKey"
    key: str | None = None

    def snapshot(self) -> tuple[str, str, str, str, str | None]:
        return (self.owner, self.canary, self.state, self.scope, self.key)


@dataclass(frozen=True)
class ImportLine:
    """One line of a ``memory.import``: ``kind`` says how it is hostile (or not)."""

    kind: Literal["new", "archived", "foreign_id", "own_id", "global", "future"]
    record_id: str
    canary: str


@dataclass
class Oracle:
    rows: dict[str, Row] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)  # ids that existed once: guesses for later steps
    operator_globals: set[str] = field(default_factory=set)  # ids the operator made global

    # --- views ------------------------------------------------------------------------------
    def owned(self, owner: str) -> set[str]:
        return {i for i, r in self.rows.items() if r.owner == owner}

    def shared(self) -> set[str]:
        return {i for i, r in self.rows.items() if r.scope == "global"}

    def allowed(self, owner: str) -> set[str]:
        """What retrieval may show ``owner``: its own rows and the operator's global ones."""
        return self.owned(owner) | (self.shared() & self.operator_globals)

    def snapshot(self) -> dict[str, tuple[str, str, str, str, str | None]]:
        return {i: r.snapshot() for i, r in self.rows.items()}

    def leaks(self, payload: object, allowed: set[str]) -> set[str]:
        """Canaries in ``payload`` (a response, JSON-encoded) of rows outside ``allowed``, or of
        rows that no longer exist."""
        text = payload if isinstance(payload, str) else msgspec.json.encode(payload).decode()
        return set(CANARY.findall(text)) - {self.rows[i].canary for i in allowed if i in self.rows}

    def guesses(self) -> list[str]:
        """Ids a hostile client may name: every row's, deleted ones, and derived import ids."""
        known = [*sorted(self.rows), *self.gone]
        derived = [str(import_id(r.owner, i)) for i, r in sorted(self.rows.items())[:4]]
        return known + derived

    def _row_of(self, owner: str, memory_id: str) -> Row | None:
        row = self.rows.get(memory_id)
        return row if row is not None and row.owner == owner else None

    def _remove(self, memory_id: str) -> None:
        del self.rows[memory_id]
        self.operator_globals.discard(memory_id)
        self.gone.append(memory_id)

    # --- writes -----------------------------------------------------------------------------
    def expect_create(
        self, owner: str, key: str | None, scope: str, *, operator: bool = False
    ) -> tuple[Refusal, Row | None]:
        """A refusal, or the existing row the key names (its new canary comes with the answer)."""
        if scope == "global" and not operator:
            return Forbidden, None
        match = next((r for r in self.rows.values() if r.owner == owner and key and r.key == key), None)
        if match is not None and match.scope == "global" and not operator:
            return Forbidden, None
        return None, match

    def created(self, row: Row, *, operator: bool = False) -> None:
        self.rows[row.id] = row
        if operator and row.scope == "global":
            self.operator_globals.add(row.id)

    def expect_update(self, owner: str, memory_id: str, canary: str, *, operator: bool = False) -> Refusal:
        row = self._row_of(owner, memory_id)
        if row is None:
            return NotFound
        if row.scope == "global" and not operator:
            return Forbidden
        row.canary, row.state = canary, "active"
        return None

    def expect_delete(self, owner: str, memory_id: str, *, operator: bool = False) -> Refusal:
        row = self._row_of(owner, memory_id)
        if row is None:
            return NotFound
        if row.scope == "global" and not operator:
            return Forbidden
        self._remove(memory_id)
        return None

    def expect_restore(self, owner: str, memory_id: str) -> Refusal:
        row = self._row_of(owner, memory_id)
        if row is None:
            return NotFound
        if row.scope == "global":
            return Forbidden
        if row.state == "active":
            return Conflict
        row.state = "active"
        return None

    def expect_clear(self, owner: str) -> int:
        """``memory.clear`` removes the owner's rows except global ones; how many."""
        doomed = [i for i in self.owned(owner) if self.rows[i].scope != "global"]
        for memory_id in doomed:
            self._remove(memory_id)
        return len(doomed)

    def expect_import(self, owner: str, lines: list[ImportLine], *, operator: bool = False) -> bool:
        """True when every line is acceptable (then they are applied), False for a line error
        (then nothing is written)."""
        planned: list[tuple[str, ImportLine]] = []
        for line in lines:
            if line.kind == "future" or (line.kind == "global" and not operator):
                return False
            target = line.record_id
            holder = self.rows.get(target)
            if holder is not None and holder.owner != owner:
                target = str(import_id(owner, target))
            existing = self.rows.get(target)
            if existing is not None and existing.scope == "global" and not operator:
                return False
            planned.append((target, line))
        for target, line in planned:
            scope = "global" if line.kind == "global" else "apiKey"
            state = "archived" if line.kind == "archived" else "active"
            self.rows[target] = Row(id=target, owner=owner, canary=line.canary, state=state, scope=scope)
            if scope == "global":
                self.operator_globals.add(target)
        return True
