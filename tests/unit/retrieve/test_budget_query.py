"""Token budget, max-token clamping, query hygiene and strategy parsing."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.retrieve.logic.fusion import (
    MAX_QUERY_CHARS,
    Candidate,
    Strategy,
    apply_budget,
    budget_tokens,
    keyword_query_is_usable,
    normalize_query,
    parse_strategy,
)
from shared.tokens import estimate_tokens

# --- tokens and budget ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("x" * 8000, 2000),
        ("😀", 1),
        ("東京タワー", 2),
    ],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def identity(n: int) -> int:
    return n


@pytest.mark.parametrize(
    ("tokens", "budget", "expected"),
    [
        ([3, 4, 5], 7, [3, 4]),  # 3 + 4 fits exactly
        ([3, 4, 5], 6, [3]),  # stops at the first that does not fit
        ([3, 4, 5], 100, [3, 4, 5]),  # everything fits
        ([3, 10, 1], 5, [3]),  # stops: the small one after the gap is not taken
        ([10, 1], 5, [10]),  # at least one, even over budget
        ([10, 1], 1, [10]),
        ([0, 0, 5], 4, [0, 0]),
        ([], 2000, []),
    ],
)
def test_apply_budget(tokens: list[int], budget: int, expected: list[int]) -> None:
    assert apply_budget(tokens, identity, budget) == expected


def test_apply_budget_on_candidates_with_estimate() -> None:
    at = datetime(2024, 5, 1, tzinfo=UTC)
    cands = [
        Candidate(memory_id=f"m{i}", content=text, created_at=at)
        for i, text in enumerate(["a" * 40, "b" * 40, "c" * 4])
    ]
    kept = apply_budget(cands, lambda c: estimate_tokens(c.content), 20)
    assert [c.memory_id for c in kept] == ["m0", "m1"]
    assert cands[0].session_id is None and cands[0].fts_rank is None


def test_apply_budget_with_a_pluggable_counter_and_precomputed_pairs() -> None:
    def words(text: str, /) -> int:
        return len(text.split())

    texts = ["one two", "three four five", "six"]
    pairs = [(t, words(t)) for t in texts]
    kept = apply_budget(pairs, lambda p: p[1], 5)
    assert kept == [("one two", 2), ("three four five", 3)]


def test_apply_budget_calls_tokens_of_lazily() -> None:
    seen: list[int] = []

    def count(n: int) -> int:
        seen.append(n)
        return n

    assert apply_budget([5, 5, 5, 5], count, 9) == [5]
    assert seen == [5, 5]


def test_apply_budget_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="negative count: -1"):
        apply_budget([1, -1], identity, 10)


@given(st.lists(st.integers(0, 50), max_size=30), st.integers(1, 200))
def test_apply_budget_properties(tokens: list[int], budget: int) -> None:
    kept = apply_budget(tokens, identity, budget)
    assert kept == tokens[: len(kept)]  # a prefix, in rank order
    assert bool(kept) == bool(tokens)  # at least one when anything matched
    assert sum(kept) <= budget or len(kept) == 1
    if len(kept) < len(tokens):
        assert sum(kept) + tokens[len(kept)] > budget  # stopped only because it did not fit


@pytest.mark.parametrize(
    ("requested", "cap", "expected"),
    [
        (None, 2000, 2000),
        (0, 2000, 0),
        (-5, 2000, 0),
        (1, 2000, 1),
        (500, 2000, 500),
        (8000, 2000, 2000),
        (None, 500, 500),
        (300, 500, 300),
        (12_000, 500, 500),
        (None, 0, 0),
        (100, 0, 0),
    ],
)
def test_the_owner_setting_caps_what_a_request_asks_for(requested: int | None, cap: int, expected: int) -> None:
    assert budget_tokens(requested, cap) == expected


def test_a_budget_of_zero_takes_nothing() -> None:
    assert apply_budget([5, 1], identity, 0) == []


def test_one_limit_bounds_requests_and_the_setting() -> None:
    import msgspec

    from memoryd.codec import decode
    from memoryd.errors import ValidationFailed
    from memoryd.schemas.retrieval import MAX_TOKENS_LIMIT, RetrieveRequest
    from shared.settings.memory import MemorySettings

    ok = decode(b'{"owner":"a","query":"q","max_tokens":%d}' % MAX_TOKENS_LIMIT, RetrieveRequest)
    assert ok.max_tokens == MAX_TOKENS_LIMIT
    with pytest.raises(ValidationFailed, match="max_tokens"):  # asking for more is an error, not a silent cut
        decode(b'{"owner":"a","query":"q","max_tokens":%d}' % (MAX_TOKENS_LIMIT + 1), RetrieveRequest)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"maxTokens": MAX_TOKENS_LIMIT + 1}, MemorySettings)


# --- queries -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", ""),
        ("   \n\t  ", ""),
        ("\x00\x00", ""),
        ("  hello   world \n\t ", "hello world"),
        ("a\x00b", "a b"),  # Postgres rejects NUL in text
        ("a\ud800b", "a b"),  # a lone surrogate cannot be encoded to UTF-8
        ("a\x85b\x7fc", "a b c"),
        ("a & !b | c:*", "a & !b | c:*"),  # operators are left to websearch_to_tsquery
        ("{{x}}", "{{x}}"),
        ("  مرحبا   بالعالم ", "مرحبا بالعالم"),
        ("東京\u3000タワー", "東京 タワー"),  # ideographic space
        ("naïve\u00a0café", "naïve café"),  # no-break space
        ("family 👨\u200d👩\u200d👧 🎉", "family 👨\u200d👩\u200d👧 🎉"),  # ZWJ kept
        ("می\u200cخواهم", "می\u200cخواهم"),  # Persian ZWNJ kept
    ],
)
def test_normalize_query(raw: str, expected: str) -> None:
    assert normalize_query(raw) == expected


def test_normalize_query_100_kb() -> None:
    raw = "word  " * 20_000  # 120 kB
    out = normalize_query(raw)
    assert out == " ".join(["word"] * 20_000)[:MAX_QUERY_CHARS].rstrip()
    assert len(out) <= MAX_QUERY_CHARS
    assert normalize_query(raw) == out  # deterministic


def test_normalize_query_one_huge_word_and_leading_blank_megabyte() -> None:
    assert normalize_query("a" * 100_000) == "a" * MAX_QUERY_CHARS
    assert normalize_query(" " * 1_000_000 + "hello") == "hello"
    assert normalize_query("hello" + " " * 1_000_000) == "hello"


def test_normalize_query_cut() -> None:
    assert normalize_query("hello world", max_chars=5) == "hello"
    assert normalize_query("hi there", max_chars=3) == "hi"  # no trailing space
    assert normalize_query("hello world", max_chars=8) == "hello wo"
    with pytest.raises(ValueError, match="max_chars must be >= 1"):
        normalize_query("x", max_chars=0)


@given(st.text(), st.integers(1, 50))
def test_normalize_query_properties(raw: str, max_chars: int) -> None:
    out = normalize_query(raw, max_chars=max_chars)
    assert len(out) <= max_chars
    assert out == out.strip()
    assert "  " not in out
    assert not any(unicodedata.category(ch) in ("Cc", "Cs") for ch in out)
    assert normalize_query(out, max_chars=max_chars) == out


@pytest.mark.parametrize(
    ("query", "usable"),
    [
        ("", False),
        ("   ", False),
        ("?!.,;:", False),
        ("!!! ... ???", False),
        ("___", False),
        ("{{}}", False),
        ("😀🎉", False),
        ("a & !b | c:*", True),
        ("{{x}}", True),
        ("42", True),
        ("مرحبا", True),
        ("東京", True),
        ("서울", True),
        ("what's 😀?", True),
    ],
)
def test_keyword_query_is_usable(query: str, usable: bool) -> None:
    assert keyword_query_is_usable(query) is usable


# --- strategies ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("exact", Strategy.EXACT),
        ("recent", Strategy.EXACT),
        ("RECENT ", Strategy.EXACT),
        ("semantic", Strategy.SEMANTIC),
        ("Hybrid", Strategy.HYBRID),
        (None, Strategy.HYBRID),
    ],
)
def test_parse_strategy(raw: str | None, expected: Strategy) -> None:
    assert parse_strategy(raw) is expected


def test_strategy_values_are_plain_strings() -> None:
    assert [s.value for s in Strategy] == ["exact", "semantic", "hybrid"]
    assert Strategy.EXACT == "exact"


@pytest.mark.parametrize("raw", ["", "bm25", "exact,semantic", "x" * 10_000])
def test_parse_strategy_rejects_unknown_names(raw: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_strategy(raw)
    message = str(info.value)
    assert message.startswith("strategy: unknown value")
    assert message.endswith("allowed: exact, semantic, hybrid, recent")
    assert len(message) < 150  # a hostile value is shortened, not echoed whole
