"""The authorization matrix: what every NATS user may do, derived from ``shared.nats_auth``.

Pure (no I/O). Every role (the fixed users of ``role_permissions`` plus one owner-bound client)
is crossed with every case of ``cases()`` (publish, subscribe or request on each subject family,
for its own owner, another owner or globally), and the outcome is computed, not written down:
``deny`` (nats-server refuses it, by the role's allow lists: ``permitted``), ``403`` (NATS lets
it through, the service refuses it: another owner than the bound subject's, or a global memory
outside ``admin.memory.*``) or ``allow``. ``tests/integration/security/test_authz_matrix.py``
runs every cell against a real nats-server and the services; ``services.security_docs`` prints
the table into ``docs/security.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from memoryd.schemas import HEALTH_OP, RPC_OPS
from memoryd.subjects import (
    ACTIVITY_BUCKET,
    ACTIVITY_PREFIX,
    CHAT_EVENTS,
    DLQ_PREFIX,
    DLQ_STREAM,
    EMBED_JOBS,
    EVENTS_STREAM,
    EXTRACT_JOBS,
    JOBS_STREAM,
    OWNER_BOUND_OPS,
    PREFIX,
    RPC_PREFIX,
    SETTINGS_CHANGED,
    SLEEP_JOBS,
)

from .nats_auth import CLIENT_ROLE, OPERATOR_ROLE, SERVICE_ROLES, bound_client_permissions, role_permissions

Action = Literal["publish", "subscribe", "request"]
Scope = Literal["own", "other", "global"]

#: The owner every role acts for in the matrix ("own"), and the one it must not reach ("other").
OWN = "authz-own"
OTHER = "authz-other"
#: The owner-bound client user of the matrix, bound to ``OWN``.
BOUND_USER = "tenant-own"
BOUND_ROLE = "owner-bound"
#: Every role of the matrix, in the order of the table's columns.
ROLES = (CLIENT_ROLE, BOUND_ROLE, OPERATOR_ROLE, *SERVICE_ROLES)
#: Ops that write a memory and so may name a global one; only the ``admin.`` ones may.
GLOBAL_WRITE_OPS = ("memory.create", "memory.import", "memory.update", "memory.restore")
API_KEYS_BUCKET = "MEM_API_KEYS"


class Outcome(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REFUSED = "403"


@dataclass(frozen=True)
class Case:
    """One row of the matrix. ``subject`` may hold ``<own>``, ``<other>`` (owners), ``<self>``
    (the role's NATS user) and ``<victim>`` (another user); ``owner`` is whose owner goes
    in the payload, ``global_memory`` marks a request naming a ``scope=global`` memory."""

    action: Action
    subject: str
    scope: Scope
    family: str
    op: str | None = None
    owner: Scope | None = None
    global_memory: bool = False

    @property
    def bound_subject_owner(self) -> Scope | None:
        """The owner an owner-bound subject (``...<own>``/``...<other>``) names, if it is one."""
        for token in ("own", "other"):
            if self.subject.endswith(f".<{token}>"):
                return token
        return None

    def refused_by_service(self) -> bool:
        """What the services refuse although NATS lets it through."""
        bound = self.bound_subject_owner
        if bound is not None and self.owner is not None and self.owner != bound:
            return True  # the payload's owner is not the subject's (events dead-lettered, RPCs 403)
        return self.global_memory and not (self.op or "").startswith("admin.")

    @property
    def label(self) -> str:
        if self.global_memory:
            note = " (a global memory)"
        elif self.bound_subject_owner and self.owner and self.owner != self.bound_subject_owner:
            note = f" (payload: {self.owner} owner)"
        else:
            note = ""
        return f"{self.action} `{self.subject}`{note}"


def user_of(role: str) -> str:
    """The NATS user a role connects as."""
    return BOUND_USER if role == BOUND_ROLE else role


def victim_of(role: str) -> str:
    """Another user whose inbox the role must not reach."""
    return "ingest" if role == CLIENT_ROLE else CLIENT_ROLE


def resolve(subject: str, role: str) -> str:
    """The concrete subject of a case for a role."""
    return (
        subject.replace("<own>", OWN)
        .replace("<other>", OTHER)
        .replace("<self>", user_of(role))
        .replace("<victim>", victim_of(role))
    )


def permissions_of(role: str) -> dict[str, object]:
    """The role's permissions exactly as ``render_authorization`` gives them to nats-server."""
    if role == BOUND_ROLE:
        return bound_client_permissions(BOUND_USER, [OWN])
    return role_permissions()[role]


# --- NATS subject semantics ----------------------------------------------------------------
def covers(pattern: str, subject: str) -> bool:
    """True when every subject ``subject`` stands for (it may hold wildcards) matches ``pattern``."""
    pt, st = pattern.split("."), subject.split(".")
    for i, p in enumerate(pt):
        if p == ">":
            return len(st) > i
        if i >= len(st):
            return False
        s = st[i]
        if s == ">":
            return False
        if p != "*" and (p != s or s == "*"):
            return False
    return len(st) == len(pt)


def _lists(perms: dict[str, object], kind: str) -> tuple[list[str], list[str]]:
    spec = perms.get(kind)
    if spec is None:
        return [">"], []
    if isinstance(spec, list):
        return list(spec), []
    assert isinstance(spec, dict), spec
    return list(spec.get("allow", [">"])), list(spec.get("deny", []))


def permitted(perms: dict[str, object], action: Action, subject: str) -> bool:
    """Whether nats-server lets a user with ``perms`` do ``action`` on ``subject`` (a request is a
    publish; its reply comes on the user's own inbox)."""
    allow, deny = _lists(perms, "subscribe" if action == "subscribe" else "publish")
    if not any(covers(p, subject) for p in allow):
        return False
    return not any(covers(d, subject) or covers(subject, d) for d in deny)


def expected(role: str, case: Case) -> Outcome:
    if not permitted(permissions_of(role), case.action, resolve(case.subject, role)):
        return Outcome.DENY
    return Outcome.REFUSED if case.refused_by_service() else Outcome.ALLOW


# --- the cases -----------------------------------------------------------------------------
def _has_owner(op: str) -> bool:
    request = HEALTH_OP.request if op == "health" else RPC_OPS[op].request
    return "owner" in request.__struct_fields__


def _rpc_cases(op: str) -> list[Case]:
    subject = f"{RPC_PREFIX}.{op}"
    fam = "rpc"
    out: list[Case] = []
    if _has_owner(op):
        out += [Case("request", subject, "own", fam, op, "own"), Case("request", subject, "other", fam, op, "other")]
    else:
        out.append(Case("request", subject, "global", fam, op))
    writes_global = op in GLOBAL_WRITE_OPS or op.removeprefix("admin.") in GLOBAL_WRITE_OPS
    if writes_global:
        out.append(Case("request", subject, "global", fam, op, "own", global_memory=True))
    if op in OWNER_BOUND_OPS:
        own, other = f"{subject}.<own>", f"{subject}.<other>"
        out += [
            Case("request", own, "own", fam, op, "own"),
            Case("request", own, "other", fam, op, "other"),
            Case("request", other, "other", fam, op, "other"),
        ]
        if writes_global:
            out.append(Case("request", own, "global", fam, op, "own", global_memory=True))
    out.append(Case("subscribe", subject, "global", fam, op))
    return out


def cases() -> list[Case]:
    """Every case of the matrix, grouped by family."""
    ev = "events"
    out = [
        Case("publish", CHAT_EVENTS, "own", ev, owner="own"),
        Case("publish", CHAT_EVENTS, "other", ev, owner="other"),
        Case("publish", f"{CHAT_EVENTS}.<own>", "own", ev, owner="own"),
        Case("publish", f"{CHAT_EVENTS}.<own>", "other", ev, owner="other"),
        Case("publish", f"{CHAT_EVENTS}.<other>", "other", ev, owner="other"),
        Case("subscribe", f"{PREFIX}.events.>", "global", ev),
    ]
    for op in (*sorted(RPC_OPS), "health"):
        out += _rpc_cases(op)
    out += [
        Case("request", f"{RPC_PREFIX}.health.ingest", "global", "rpc", "health"),
        Case("subscribe", f"{RPC_PREFIX}.>", "global", "rpc"),
        Case("publish", SETTINGS_CHANGED, "global", "settings"),
        Case("subscribe", SETTINGS_CHANGED, "global", "settings"),
        Case("publish", f"{DLQ_PREFIX}.ingest", "global", "dlq"),
        Case("subscribe", f"{DLQ_PREFIX}.>", "global", "dlq"),
        Case("request", "$JS.API.INFO", "global", "jetstream"),
        Case("request", f"$JS.API.STREAM.INFO.{EVENTS_STREAM}", "global", "jetstream"),
        Case("request", f"$JS.API.STREAM.MSG.GET.{EVENTS_STREAM}", "global", "jetstream"),
        Case("request", f"$JS.API.CONSUMER.INFO.{JOBS_STREAM}.embed", "global", "jetstream"),
        Case("request", f"$JS.API.STREAM.INFO.{DLQ_STREAM}", "global", "jetstream"),
        Case("publish", f"$JS.ACK.{JOBS_STREAM}.authz-none.1.1.1.0.0", "global", "jetstream"),
        Case("subscribe", "$JS.API.>", "global", "jetstream"),
        Case("publish", f"$KV.{ACTIVITY_BUCKET}.<own>", "own", "kv"),
        Case("publish", f"$KV.{API_KEYS_BUCKET}.authz-probe", "global", "kv"),
        Case("request", f"$JS.API.STREAM.MSG.GET.KV_{ACTIVITY_BUCKET}", "own", "kv"),
        Case("subscribe", "$KV.>", "global", "kv"),
        Case("publish", f"{ACTIVITY_PREFIX}.<own>", "own", "activity"),
        Case("subscribe", f"{ACTIVITY_PREFIX}.>", "global", "activity"),
        Case("subscribe", "_INBOX.<self>.>", "own", "inbox"),
        Case("subscribe", "_INBOX.<victim>.>", "other", "inbox"),
        Case("subscribe", "_INBOX.>", "global", "inbox"),
        Case("publish", "_INBOX.<victim>.authz", "other", "inbox"),
        Case("publish", EXTRACT_JOBS, "global", "jobs"),
        Case("publish", EMBED_JOBS, "global", "jobs"),
        Case("publish", SLEEP_JOBS, "global", "jobs"),
        Case("subscribe", f"{PREFIX}.jobs.>", "global", "jobs"),
        Case("request", "$SRV.PING", "global", "discovery"),
        Case("subscribe", "$SRV.>", "global", "discovery"),
    ]
    return out


def msg_get_subject(api_subject: str, role: str) -> str:
    """The subject whose last message a ``$JS.API.STREAM.MSG.GET.<stream>`` case asks for."""
    if api_subject.endswith(f"KV_{ACTIVITY_BUCKET}"):
        return resolve(f"$KV.{ACTIVITY_BUCKET}.<own>", role)
    return CHAT_EVENTS


def matrix() -> list[tuple[Case, dict[str, Outcome]]]:
    """Every case with the expected outcome per role."""
    return [(case, {role: expected(role, case) for role in ROLES}) for case in cases()]


# --- the table -----------------------------------------------------------------------------
_CELL = {Outcome.ALLOW: "✓", Outcome.DENY: "✗", Outcome.REFUSED: "403"}


def render_table() -> str:
    """The matrix as a Markdown table (one row per case, one column per role)."""
    head = ["case", "scope", *(f"`{user_of(r)}`" if r != BOUND_ROLE else "owner-bound" for r in ROLES)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case, row in matrix():
        lines.append(f"| {case.label} | {case.scope} | " + " | ".join(_CELL[row[r]] for r in ROLES) + " |")
    return "\n".join(lines) + "\n"


def counts() -> dict[str, int]:
    """How many cells of each outcome the matrix has, and in all."""
    cells = [o for _case, row in matrix() for o in row.values()]
    return {"cases": len(cases()), "roles": len(ROLES), "cells": len(cells)} | {str(o): cells.count(o) for o in Outcome}
