"""The LangGraph store's mapping as pure functions: owner, upsert key, embedded text, metadata
and back, gateway filters, LangGraph's value filter and namespace listing; and the REST calls
each operation makes, driven with recorded answers."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from memoryd.errors import ConfigError, ValidationFailed
from memoryd.integrations.langgraph import mapping, steps
from memoryd.integrations.langgraph.store import config_of
from memoryd.schemas.base import MAX_KEY_LEN
from memoryd.schemas.memory import MemoryCreateResult, MemoryListResult, MemoryRecord
from memoryd.schemas.retrieval import RetrievedMemory, RetrieveResult

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = datetime(2026, 1, 3, 3, 4, 5, tzinfo=UTC)


def test_owner_is_the_label_at_owner_label_else_the_default() -> None:
    assert mapping.owner_of(("memories", "alice"), 1, None) == "alice"
    assert mapping.owner_of(("memories", "alice", "thread"), 1, "app") == "alice"
    assert mapping.owner_of(("memories",), 1, "app") == "app"
    assert mapping.owner_of(("memories",), 1, None) is None
    assert mapping.owner_of(("memories", "*"), 1, "app") == "app"  # a wildcard names no owner
    assert mapping.owner_of(("memories", "alice"), None, "app") == "app"


def test_memory_key_holds_the_namespace_and_is_injective() -> None:
    assert mapping.memory_key(("memories", "alice"), "k1") == 'lg:["memories","alice","k1"]'
    assert mapping.memory_key(("a", "b"), "c") != mapping.memory_key(("a",), "b,c")
    assert mapping.memory_key(("a", "b"), "c") != mapping.memory_key(("a", "b", "c"), "")
    long = mapping.memory_key(("ns",), "x" * 500)
    assert long.startswith("lg#") and len(long) == 3 + 64 <= MAX_KEY_LEN
    assert long != mapping.memory_key(("ns",), "x" * 501)
    with pytest.raises(ValidationFailed) as bad:
        mapping.memory_key(("ns",), 7)  # type: ignore[arg-type]
    assert bad.value.field == "$.key"


def test_content_is_the_text_field_else_the_json() -> None:
    assert mapping.content_of({"content": "I like tea", "text": "other"}, None) == ("I like tea", True)
    assert mapping.content_of({"text": "from text"}, None) == ("from text", True)
    assert mapping.content_of({"memory": "from memory", "content": "  "}, None) == ("from memory", True)
    assert mapping.content_of({"b": 1, "a": "x"}, None) == ('{"a": "x", "b": 1}', True)
    assert mapping.content_of({"content": {"nested": 1}}, None) == ('{"content": {"nested": 1}}', True)


def test_index_fields_pick_the_embedded_text_as_langgraph_paths() -> None:
    value = {"title": "Trip", "facts": ["window seat", "vegetarian"], "meta": {"lang": "en"}}
    assert mapping.content_of(value, ("title", "facts[*]")) == ("Trip\nwindow seat\nvegetarian", True)
    assert mapping.content_of(value, ("meta.lang",)) == ("en", True)
    assert mapping.content_of(value, ("$",))[0] == json.dumps(value, sort_keys=True)
    assert mapping.content_of(value, ("missing",)) == (json.dumps(value, sort_keys=True), False)


@pytest.mark.parametrize("value", [{"when": object()}, {"content": "text", "when": object()}, {"n": float("nan")}])
def test_a_value_that_is_not_json_is_a_validation_error(value: dict[str, object]) -> None:
    with pytest.raises(ValidationFailed) as bad:
        next(steps.put(PutOp(("memories", "alice"), "k", value), steps.Config()))
    assert bad.value.field == "$.value"


def test_metadata_reads_back_as_the_item() -> None:
    meta = mapping.metadata_of(("memories", "alice", "t1"), "k", {"content": "x", "n": 1}, True)
    assert meta == {
        "langgraph_store": True,
        "langgraph_ns": "memories.alice.t1",
        "langgraph_depth": 3,
        "langgraph_ns.0": "memories",
        "langgraph_ns.1": "alice",
        "langgraph_ns.2": "t1",
        "langgraph_key": "k",
        "langgraph_value": {"content": "x", "n": 1},
        "langgraph_indexed": True,
    }
    stored = mapping.stored_of(meta, T0, T1)
    assert stored == mapping.Stored(("memories", "alice", "t1"), "k", {"content": "x", "n": 1}, T0, T1)
    assert mapping.stored_of({"project": "web"}, T0, T1) is None  # a memory not written by the store
    assert mapping.stored_of({**meta, "langgraph_value": "text"}, T0, T1) is None


def test_gateway_filters_select_the_prefix_and_the_item() -> None:
    assert mapping.prefix_filter(()) == {"langgraph_store": True}
    assert mapping.prefix_filter(("a", "*", "c")) == {
        "langgraph_store": True,
        "langgraph_ns.0": "a",
        "langgraph_ns.2": "c",
    }
    assert mapping.item_filter(("a", "b"), ["k"]) == {
        "langgraph_store": True,
        "langgraph_ns": "a.b",
        "langgraph_key": "k",
    }
    assert mapping.item_filter(("a",), ["y", "x", "y"])["langgraph_key"] == {"in": ["x", "y"]}


@pytest.mark.parametrize(
    ("namespace", "field"),
    [
        (("a.b",), "$.namespace[0]"),
        (("a", ""), "$.namespace[1]"),
        (("a", 3), "$.namespace[1]"),
        (("x",) * 31, "$.namespace"),
    ],
)
def test_bad_namespaces_name_the_label(namespace: tuple[str, ...], field: str) -> None:
    with pytest.raises(ValidationFailed) as bad:
        mapping.check_namespace(namespace)
    assert bad.value.field == field


def test_value_filter_follows_langgraph() -> None:
    value = {"kind": "doc", "n": 3, "tags": ["a", "b"], "meta": {"lang": "en", "v": 2}, "flag": True}
    assert mapping.matches(value, None) and mapping.matches(value, {})
    assert mapping.matches(value, {"kind": "doc", "n": 3})
    assert not mapping.matches(value, {"kind": "note"})
    assert mapping.matches(value, {"tags": ["a", "b"]}) and not mapping.matches(value, {"tags": ["a"]})
    assert mapping.matches(value, {"meta": {"lang": "en"}}) and not mapping.matches(value, {"meta": {"lang": "fr"}})
    assert mapping.matches(value, {"n": {"$gt": 2, "$lte": 3}}) and not mapping.matches(value, {"n": {"$lt": 3}})
    assert mapping.matches(value, {"kind": {"$ne": "note"}}) and mapping.matches(value, {"missing": {"$eq": None}})
    assert not mapping.matches(value, {"kind": {"$gt": 1}})  # a string is not greater than a number
    assert not mapping.matches(value, {"flag": {"$gte": 1}})  # nor is a boolean a number
    assert mapping.matches(value, {"meta": {"v": {"$gte": 2}}})
    with pytest.raises(ValidationFailed) as unknown:
        mapping.matches(value, {"n": {"$in": [3]}})
    assert unknown.value.field == "$.filter.n.$in"
    with pytest.raises(ValidationFailed) as not_object:
        mapping.matches(value, ["kind"])  # type: ignore[arg-type]
    assert not_object.value.field == "$.filter"
    with pytest.raises(ValidationFailed) as not_number:
        mapping.matches(value, {"n": {"$gt": "2"}})
    assert not_number.value.field == "$.filter.n.$gt"


NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "c", "f"), ("b", "a", "f"), ("users", "123")]


def test_namespace_selection_follows_langgraph() -> None:
    assert mapping.select_namespaces(NAMESPACES, [], None, 100, 0) == sorted(NAMESPACES)
    assert mapping.select_namespaces(NAMESPACES, [("suffix", ("f",))], None, 100, 0) == [
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert mapping.select_namespaces(NAMESPACES, [("prefix", ("*", "a"))], None, 100, 0) == [("b", "a", "f")]
    assert mapping.select_namespaces(NAMESPACES, [("prefix", ("a",))], 2, 100, 0) == [("a", "b"), ("a", "c")]
    assert mapping.select_namespaces(NAMESPACES, [], 1, 2, 1) == [("b",), ("users",)]
    with pytest.raises(ValidationFailed):
        mapping.select_namespaces(NAMESPACES, [("infix", ("a",))], None, 10, 0)


def test_store_config_accepts_fields_only() -> None:
    config = config_of(
        {"fields": ["text"], "dims": 384}, owner=None, owner_label=1, memory_type="factual", threshold=None
    )
    assert config.fields == ("text",)
    with pytest.raises(ConfigError) as embed:
        config_of({"embed": "openai:x"}, owner=None, owner_label=1, memory_type="factual", threshold=None)
    assert embed.value.setting == "index.embed"
    with pytest.raises(ConfigError):
        config_of({"fields": "text"}, owner=None, owner_label=1, memory_type="factual", threshold=None)
    with pytest.raises(ConfigError):
        config_of(None, owner=None, owner_label=-1, memory_type="factual", threshold=None)


# --- the calls each operation makes ---------------------------------------------------------
def record(namespace: tuple[str, ...], key: str, value: dict[str, object], memory_id: str = "m1") -> MemoryRecord:
    return MemoryRecord(
        id=memory_id,
        owner="alice",
        memory_type="factual",
        content="x",
        source="api",
        state="active",
        created_at=T0,
        updated_at=T1,
        content_hash="h",
        key=mapping.memory_key(namespace, key),
        metadata=mapping.metadata_of(namespace, key, value, True),
    )


def listing(*records: MemoryRecord) -> MemoryListResult:
    return MemoryListResult(memories=list(records), total=len(records), tokens_used=0, hit_rate=0.0)


def test_put_upserts_by_key_for_the_namespace_owner() -> None:
    gen = steps.put(PutOp(("memories", "alice"), "k", {"text": "hi", "n": 1}), steps.Config())
    call = next(gen)
    assert (call.method, call.path) == ("POST", "/v1/memories")
    assert call.body is not None
    assert call.body["owner"] == "alice" and call.body["content"] == "hi"
    assert call.body["key"] == 'lg:["memories","alice","k"]' and call.body["metadata"]["langgraph_value"] == {
        "text": "hi",
        "n": 1,
    }
    with pytest.raises(StopIteration):
        gen.send(MemoryCreateResult(memory=record(("memories", "alice"), "k", {"text": "hi"}), created=True))


def test_put_none_deletes_what_the_key_holds() -> None:
    ns = ("memories", "alice")
    gen = steps.put(PutOp(ns, "k", None), steps.Config())
    find = next(gen)
    assert find.query["owner"] == "alice" and json.loads(find.query["filters"])["langgraph_key"] == "k"
    delete = gen.send(listing(record(ns, "k", {"a": 1}, "id-1"), record(ns, "other", {"a": 1}, "id-2")))
    assert (delete.method, delete.path) == ("DELETE", "/v1/memories/id-1")
    with pytest.raises(StopIteration):
        gen.send(None)


def test_a_key_that_is_not_a_string_fails_before_any_call() -> None:
    for op in (GetOp(("ns",), 7), PutOp(("ns",), 7, None), PutOp(("ns",), 7, {"a": 1})):  # type: ignore[arg-type]
        with pytest.raises(ValidationFailed) as bad:
            next(steps.one(op, steps.Config()))
        assert bad.value.field == "$.key"


def test_get_reads_the_item_with_the_records_times() -> None:
    ns = ("docs",)
    gen = steps.get(GetOp(ns, "k"), steps.Config(owner_label=None))
    call = next(gen)
    assert "owner" not in call.query  # an owner's own key: no owner named
    with pytest.raises(StopIteration) as done:
        gen.send(listing(record(ns, "k", {"a": 1})))
    item = done.value.value
    assert (item.namespace, item.key, item.value, item.created_at, item.updated_at) == (ns, "k", {"a": 1}, T0, T1)


def test_search_with_a_query_ranks_then_reads_the_records() -> None:
    ns = ("docs", "x")
    gen = steps.search(SearchOp(("docs",), filter={"n": 2}, limit=1, query="tea"), steps.Config(owner_label=None))
    call = next(gen)
    assert call.path == "/v1/search" and call.body is not None
    assert call.body["filters"] == {"langgraph_store": True, "langgraph_ns.0": "docs", "langgraph_indexed": True}
    assert call.body["limit"] == 100 and "threshold" not in call.body and "strategy" not in call.body

    def hit(key: str, n: int, score: float) -> RetrievedMemory:
        meta = mapping.metadata_of(ns, key, {"n": n}, True)
        return RetrievedMemory(
            id=key,
            content="x",
            memory_type="factual",
            created_at=T0,
            score=score,
            tier="keyword",
            tokens=1,
            metadata=meta,
        )

    answer = RetrieveResult(
        memories=[hit("a", 1, 0.9), hit("b", 2, 0.5), hit("c", 2, 0.4)], strategy="hybrid", tokens_used=3
    )
    read = gen.send(answer)
    assert json.loads(read.query["filters"])["langgraph_key"] == {"in": ["b"]}
    with pytest.raises(StopIteration) as done:
        gen.send(listing(record(ns, "b", {"n": 2}, "b")))
    [item] = done.value.value
    assert (item.key, item.score, item.updated_at) == ("b", 0.5, T1)


def test_the_store_threshold_and_strategy_reach_the_search() -> None:
    config = steps.Config(owner_label=None, threshold=0.3, strategy="semantic")
    call = next(steps.search(SearchOp(("docs",), query="tea", limit=5, offset=5), config))
    assert call.body is not None
    assert (call.body["threshold"], call.body["strategy"], call.body["limit"]) == (0.3, "semantic", 10)


def test_list_namespaces_pages_through_the_owner() -> None:
    gen = steps.list_namespaces(
        ListNamespacesOp((MatchCondition("prefix", ("a", "*")),), max_depth=2), steps.Config(owner_label=None)
    )
    first = next(gen)
    assert json.loads(first.query["filters"]) == {"langgraph_store": True, "langgraph_ns.0": "a"}
    page = [record(("a", "b", str(i)), "k", {}, f"m{i}") for i in range(steps.PAGE)]
    second = gen.send(listing(*page))
    assert second.query["offset"] == steps.PAGE
    with pytest.raises(StopIteration) as done:
        gen.send(listing(record(("a", "c"), "k", {}), record(("b", "c"), "k", {})))
    assert done.value.value == [("a", "b"), ("a", "c")]


def test_agent_and_session_labels_are_the_memorys_columns() -> None:
    config = steps.Config(agent_label=2, session_label=3)
    put = next(steps.put(PutOp(("memories", "alice", "support", "t1"), "k", {"text": "hi"}), config))
    assert put.body is not None
    assert (put.body["owner"], put.body["agent_id"], put.body["session_id"]) == ("alice", "support", "t1")
    assert put.body["metadata"]["langgraph_ns.2"] == "support"  # the namespace still reads back whole
    shallow = next(steps.put(PutOp(("memories", "alice"), "k", {"text": "hi"}), config))
    assert shallow.body is not None and "agent_id" not in shallow.body and "session_id" not in shallow.body

    ranked = next(steps.search(SearchOp(("memories", "alice", "support"), query="tea"), config))
    assert ranked.body is not None and ranked.body["agent_id"] == "support" and "session_id" not in ranked.body
    assert "langgraph_ns.2" not in ranked.body["filters"] and ranked.body["filters"]["langgraph_ns.1"] == "alice"
    listed = next(steps.search(SearchOp(("memories", "alice", "support")), config))
    assert listed.query["agent_id"] == "support" and "langgraph_ns.2" not in json.loads(listed.query["filters"])
    anyone = next(steps.search(SearchOp(("memories", "alice", "*", "t1")), config))
    assert "agent_id" not in anyone.query and anyone.query["session_id"] == "t1"
    got = next(steps.get(GetOp(("memories", "alice", "coder"), "k"), config))
    assert got.query["agent_id"] == "coder"
    names = next(steps.list_namespaces(ListNamespacesOp((MatchCondition("prefix", ("m", "a", "x")),)), config))
    assert names.query["agent_id"] == "x"
    with pytest.raises(ConfigError) as same:
        config_of(None, owner=None, owner_label=1, agent_label=1, memory_type="factual", threshold=None)
    assert same.value.setting == "agent_label"
    with pytest.raises(ConfigError):
        config_of(None, owner=None, owner_label=1, session_label=-2, memory_type="factual", threshold=None)


def test_importing_memoryd_loads_no_langgraph() -> None:
    code = "import sys, memoryd, memoryd.integrations; print([m for m in sys.modules if m.startswith('langgraph')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
