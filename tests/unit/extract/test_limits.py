"""Limits, keys, dedupe, the 64 KiB tail cut, odd input and the metadata merge."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.extract.logic.rules import (
    MAX_INPUT_BYTES,
    MAX_KEY_CHARS,
    Category,
    Fact,
    clip_to_tail,
    extract_facts,
    fact_key,
    fact_metadata,
    normalize_content,
)

# --- normalize_content ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("abc", "abc"),
        ("  a  b  ", "a b"),
        ("a\t\n b", "a b"),
        ("\u00a0abc\u2003", "abc"),
        ("ab", None),
        ("  ab  ", None),
        ("", None),
        ("x" * 500, "x" * 500),
        ("x" * 501, None),
        ("x" * 498 + "    y", "x" * 498 + " y"),
        ("x" * 499 + "    y", None),
    ],
)
def test_normalize_content(raw: str, expected: str | None) -> None:
    assert normalize_content(raw) == expected


@pytest.mark.parametrize(
    ("obj", "kept"),
    [("ab", False), ("abc", True), ("x" * 500, True), ("x" * 501, False)],
)
def test_object_length_limits(obj: str, kept: bool) -> None:
    facts = extract_facts(f"I prefer {obj}.")
    assert [f.subject for f in facts] == ([obj] if kept else [])


def test_whitespace_in_object_is_collapsed_before_the_limit() -> None:
    assert extract_facts("I prefer  Type \t  Script  .")[0].subject == "Type Script"
    assert extract_facts("I prefer " + "x" * 498 + "    y")[0].subject == "x" * 498 + " y"
    assert extract_facts("I prefer " + "x" * 499 + "    y") == []


# --- fact_key -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "text", "key"),
    [
        ("preference", "TypeScript", "preference:typescript"),
        ("decision", "Postgres for this project", "decision:postgres_for_this_project"),
        ("pattern", "commit before pushing", "pattern:commit_before_pushing"),
        ("pattern", "  to the gym  ", "pattern:gym"),
        ("preference", "a cup of tea", "preference:cup_of_tea"),
        ("preference", "an apple", "preference:apple"),
        ("preference", "the", "preference:the"),
        ("preference", "C++ / C#!!", "preference:c_c"),
        ("preference", "__snake__case__", "preference:snake_case"),
        ("preference", "ＴｙｐｅＳｃｒｉｐｔ", "preference:typescript"),
        ("preference", "Straße", "preference:strasse"),
        ("preference", "crème brûlée", "preference:crème_brûlée"),
        ("preference", "日本語 ドキュメント", "preference:日本語_ドキュメント"),
    ],
)
def test_fact_key(category: Category, text: str, key: str) -> None:
    assert fact_key(category, text) == key


def test_fact_key_without_alphanumerics_is_a_stable_hash() -> None:
    key = fact_key("preference", "!!!")
    assert re.fullmatch(r"preference:h[0-9a-f]{12}", key)
    assert key == fact_key("preference", "!!!")
    assert key != fact_key("preference", "???")


def test_long_keys_are_capped_with_a_hash_suffix() -> None:
    base = "word " * 40
    first = fact_key("preference", base + "alpha")
    second = fact_key("preference", base + "beta")
    assert len(first) <= MAX_KEY_CHARS and len(second) <= MAX_KEY_CHARS
    assert first != second
    assert first.startswith("preference:word_word_")
    assert re.fullmatch(r"preference:[a-z_]+_[0-9a-f]{8}", first)
    assert first == fact_key("preference", base + "alpha")


def test_key_of_exact_budget_is_not_hashed() -> None:
    slug = "x" * (MAX_KEY_CHARS - len("decision:"))
    assert fact_key("decision", slug) == "decision:" + slug


# --- dedupe and order --------------------------------------------------------------------


def test_dedupe_last_statement_wins_at_first_position() -> None:
    facts = extract_facts("I like Python. I love Go lang. I don't like Python.")
    assert [(f.key, f.polarity, f.content) for f in facts] == [
        ("preference:python", "negative", "User does not like Python"),
        ("preference:go_lang", "positive", "User loves Go lang"),
    ]


def test_dedupe_merges_spellings_of_the_same_key() -> None:
    facts = extract_facts("I love Rust. My favorite language is RUST. I prefer rust!")
    assert len(facts) == 1
    assert facts[0].content == "User prefers rust"


def test_same_subject_in_different_categories_is_not_deduplicated() -> None:
    facts = extract_facts("I prefer Docker. I chose Docker. I always use Docker.")
    assert [f.key for f in facts] == ["preference:docker", "decision:docker", "pattern:use_docker"]


def test_output_is_deterministic() -> None:
    text = "I went with NATS. I love Redis. I never deploy on Fridays. " * 50
    assert extract_facts(text) == extract_facts(text)
    assert len(extract_facts(text)) == 3


# --- 64 KiB tail -------------------------------------------------------------------------


def test_fact_at_the_start_of_100_kib_is_dropped_and_one_at_the_end_kept() -> None:
    filler = "Nothing to see here. " * (100 * 1024 // 21)
    text = "I prefer Haskell. " + filler + "I prefer Elixir."
    assert len(text.encode()) > 100 * 1024
    assert [f.key for f in extract_facts(text)] == ["preference:elixir"]


def test_text_of_exactly_64_kib_is_not_cut() -> None:
    text = "I prefer Haskell. " + "x" * (MAX_INPUT_BYTES - len("I prefer Haskell. "))
    assert len(text.encode()) == MAX_INPUT_BYTES
    assert clip_to_tail(text) is text
    assert [f.key for f in extract_facts(text)] == ["preference:haskell"]


def test_one_byte_over_cuts_the_head() -> None:
    text = "Z" + "y" * MAX_INPUT_BYTES
    assert clip_to_tail(text) == "y" * MAX_INPUT_BYTES


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_tail_cut_lands_on_a_character_boundary(char: str) -> None:
    width = len(char.encode())
    text = char * (MAX_INPUT_BYTES // width + 10)
    tail = clip_to_tail(text)
    assert tail == char * (MAX_INPUT_BYTES // width)
    assert len(tail.encode()) <= MAX_INPUT_BYTES


def test_tail_cut_survives_lone_surrogates() -> None:
    text = "\ud800" * 30000
    assert clip_to_tail(text) == "\ud800" * (MAX_INPUT_BYTES // 3)


# --- odd input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("I prefer x' OR 1=1; --", "x' OR 1=1"),
        ("I prefer Robert'); DROP TABLE memories;--", "Robert')"),
        ("I prefer foo & bar | !baz <-> qux:*", "foo & bar | !baz <-> qux:*"),
        ('I prefer "quoted" (parens) \\backslash\\', '"quoted" (parens) \\backslash\\'),
        ("I prefer {{template}} and %s", "{{template}} and %s"),
        ("I prefer 日本語のドキュメント", "日本語のドキュメント"),
        ("I love crème brûlée 🍮", "crème brûlée 🍮"),
        ("I prefer O’Reilly books", "O’Reilly books"),
        ("I prefer NUL\x00byte", "NUL\x00byte"),
    ],
)
def test_metacharacters_and_unicode_are_kept_literally(text: str, subject: str) -> None:
    facts = extract_facts(text)
    assert [f.subject for f in facts] == [subject]
    assert facts[0].content.endswith(" " + subject)


def test_object_without_letters_or_digits_is_dropped() -> None:
    assert extract_facts("I love 🍕🍕🍕. I prefer ---.") == []


_TRIGGERS = st.sampled_from(
    ["I prefer ", "I don't like ", "my favorite x is ", "I'll use ", "I always ", ". ", "? ", "\n"]
)


@given(st.lists(st.one_of(_TRIGGERS, st.text(max_size=40)), max_size=30).map("".join))
def test_arbitrary_text_never_breaks_the_invariants(text: str) -> None:
    facts = extract_facts(text)
    keys = [f.key for f in facts]
    assert len(keys) == len(set(keys))
    for fact in facts:
        assert fact.key == fact_key(fact.category, fact.subject)
        assert fact.key.startswith(fact.category + ":") and len(fact.key) <= MAX_KEY_CHARS
        assert fact.content.startswith("User")
        assert 1 <= len(fact.subject) <= 500


# --- metadata ----------------------------------------------------------------------------


def test_fact_metadata() -> None:
    fact = extract_facts("I don't like Python.")[0]
    assert fact_metadata(fact, extracted_at="2026-01-02T03:04:05Z") == {
        "category": "preference",
        "extracted_at": "2026-01-02T03:04:05Z",
        "source": "rule",
        "polarity": "negative",
        "subject": "Python",
    }
    assert fact_metadata(fact, extracted_at="t", source="llm")["source"] == "llm"


def test_fact_is_frozen() -> None:
    fact = Fact(category="pattern", memory_type="factual", key="pattern:x", content="c", subject="x")
    assert fact.polarity == "positive"
    with pytest.raises(AttributeError):
        fact.key = "other"  # type: ignore[misc]
