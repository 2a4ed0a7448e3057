"""An agent's facts are keyed apart from the owner's other agents' (each agent keeps its own copy)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from memoryd.schemas.base import MAX_KEY_LEN
from memoryd.schemas.events import ExtractJob, Turn
from services.extract.handlers import plan_facts
from services.extract.logic.rules import agent_key, extract_facts, fact_key
from services.ingest.logic.chat import session_key


def test_without_an_agent_the_key_is_the_facts_own() -> None:
    assert agent_key("preference:typescript", None) == "preference:typescript"


def test_each_agent_has_its_own_key_within_the_key_limit() -> None:
    key = fact_key("preference", "x" * 500)
    assert agent_key("preference:typescript", "support") == "preference:typescript@agent:support"
    long_a, long_b = agent_key(key, "a" * 256), agent_key(key, "a" * 255 + "b")
    assert long_a != long_b
    assert max(len(long_a), len(long_b), len(agent_key(key, "z" * 100))) <= MAX_KEY_LEN


def test_planned_facts_of_an_agents_event_carry_its_key() -> None:
    turn = Turn(role="user", content="I prefer TypeScript.")
    job = ExtractJob(event_id="e1", owner="alice", turns=[turn], occurred_at=datetime(2026, 1, 1, tzinfo=UTC))
    facts = extract_facts(turn.content)
    plain = plan_facts(job, facts, [])
    coder = plan_facts(msgspec.structs.replace(job, agent_id="coder"), facts, [])
    assert [f.key for f in plain] == [f.key for f in facts]
    assert [f.key for f in coder] == [f"{f.key}@agent:coder" for f in facts]


def test_turns_of_an_agent_are_deduplicated_apart() -> None:
    assert session_key(None) == "" and session_key("s1") == "s1"
    keys = {session_key(None, "a"), session_key("s1", "a"), session_key(None, "b"), session_key("s1", "b")}
    assert len(keys) == 4 and not keys & {"", "s1", "a", "b"}
