"""The authorization matrix: NATS subject rules, the security policy it must show, and its docs.

The expected outcomes are derived from the role definitions, so a too-generous role would
move the expectation with it; the policy below is stated independently and must hold in the
derived matrix: no client role reaches another owner on an owner-bound subject, the JetStream
API, KV buckets, work queues, the DLQ, settings, sleep, admin, or another user's inbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services import security_docs
from shared import authz
from shared.authz import BOUND_ROLE, Outcome
from shared.nats_auth import CLIENT_ROLE, OPERATOR_ROLE, SERVICE_ROLES

ROOT = Path(__file__).resolve().parents[3]
CLIENTS = (CLIENT_ROLE, BOUND_ROLE)
OPERATOR_ONLY_OPS = ("admin.", "settings.", "sleep.", "summarize", "cleanup", "reindex", "embed", "engine.status")


@pytest.mark.parametrize(
    ("pattern", "subject", "covered"),
    [
        ("mem.v1.>", "mem.v1.rpc.x", True),
        ("mem.v1.>", "mem.v1", False),
        ("mem.v1.rpc.*", "mem.v1.rpc.retrieve", True),
        ("mem.v1.rpc.*", "mem.v1.rpc.memory.get", False),
        ("mem.v1.rpc.*", "mem.v1.rpc.*", True),
        ("mem.v1.rpc.*", "mem.v1.rpc.>", False),
        ("mem.v1.rpc.retrieve", "mem.v1.rpc.*", False),
        ("_INBOX.client.>", "_INBOX.>", False),
        ("_INBOX.client.>", "_INBOX.client.>", True),
        ("_INBOX.client.>", "_INBOX.client.x.y", True),
        (">", "$JS.API.>", True),
    ],
)
def test_covers_follows_nats_subject_rules(pattern: str, subject: str, covered: bool) -> None:
    assert authz.covers(pattern, subject) is covered


def test_every_rpc_op_and_family_is_in_the_matrix() -> None:
    cases = authz.cases()
    from memoryd.schemas import RPC_OPS

    assert {c.op for c in cases if c.family == "rpc"} >= set(RPC_OPS) | {"health"}
    assert {c.family for c in cases} == {
        "events", "rpc", "settings", "dlq", "jetstream", "kv", "activity", "inbox", "jobs", "discovery",
    }  # fmt: skip
    assert {c.action for c in cases} == {"publish", "subscribe", "request"}
    assert {c.scope for c in cases} == {"own", "other", "global"}
    assert len(set(cases)) == len(cases)


def test_client_roles_reach_only_client_subjects() -> None:
    for case, row in authz.matrix():
        for role in CLIENTS:
            if row[role] != Outcome.ALLOW:
                continue
            where = f"{role}: {case.label} [{case.scope}]"
            assert case.family in ("events", "rpc", "inbox"), where
            assert case.action != "subscribe" or case.subject == "_INBOX.<self>.>", where
            assert not (case.op or "").startswith(OPERATOR_ONLY_OPS), where
            assert not case.global_memory, where
            if role == BOUND_ROLE:
                assert case.scope != "other" and case.owner != "other", where


def test_only_the_operator_and_the_gateway_call_operator_ops_and_write_global_memories() -> None:
    for case, row in authz.matrix():
        if case.action == "request" and (case.global_memory or (case.op or "").startswith("admin.")):
            allowed = {role for role, outcome in row.items() if outcome == Outcome.ALLOW}
            assert allowed <= {OPERATOR_ROLE, "gateway"}, case.label


def test_no_role_but_the_operator_reads_other_users_inboxes_or_events() -> None:
    for case, row in authz.matrix():
        if (case.family == "inbox" and case.scope != "own") or case.subject == "mem.v1.events.>":
            assert {r for r, o in row.items() if o == Outcome.ALLOW} <= {OPERATOR_ROLE}, case.label


def test_each_service_can_do_its_job() -> None:
    """What the pipeline needs, in the matrix: ingest and extract queue embed jobs, ingest and the
    gateway take chat events, every service provisions the streams, but none has the whole
    JetStream API and only ingest reads the chat events' stream."""
    allowed = {(c.action, c.subject, r) for c, row in authz.matrix() for r, o in row.items() if o == Outcome.ALLOW}
    for role in ("ingest", "extract", "embed", "sleep"):
        assert ("publish", "mem.v1.jobs.embed", role) in allowed
    assert ("publish", "mem.v1.jobs.extract", "ingest") in allowed
    assert ("publish", "mem.v1.events.chat", "gateway") in allowed
    for role in SERVICE_ROLES:
        assert ("request", "$JS.API.STREAM.INFO.MEM_EVENTS", role) in allowed
        assert ("request", "$JS.API.INFO", role) not in allowed
    readers = {r for a, subject, r in allowed if subject == "$JS.API.STREAM.MSG.GET.MEM_EVENTS"}
    assert readers == {"operator", "ingest"}


def test_security_md_is_current() -> None:
    """docs/security.md holds what ``make security-docs`` writes now."""
    doc = ROOT / "docs" / "security.md"
    text = doc.read_text(encoding="utf-8")
    assert text == security_docs.render(text, ROOT / "bench-results"), "stale: run `make security-docs`"
