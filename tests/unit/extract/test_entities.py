"""The rule-based entity pass and co-occurrence counting."""

import pytest

from services.extract.logic.entities import Entity, co_occurrences, extract_entities, normalize_name


def kinds(text: str) -> list[tuple[str, str, str]]:
    return [(e.name, e.kind, e.normalized) for e in extract_entities(text)]


def test_people_tech_and_things() -> None:
    text = "I met Alice Smith yesterday. She runs PostgreSQL on Kubernetes at Acme Corp."
    assert kinds(text) == [
        ("Alice Smith", "person", "alice smith"),
        ("PostgreSQL", "tech", "postgres"),
        ("Kubernetes", "tech", "kubernetes"),
        ("Acme Corp", "thing", "acme corp"),
    ]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Yesterday my friend Bob called.", "Bob"),
        ("Then I emailed Carol about it.", "Carol"),
        ("Thanks Dave!", "Dave"),
        ("Erin said it was fine.", "Erin"),
        ("I talked to Dr Frank Moss today.", "Frank Moss"),
        ("Zoë met Ünal", "Zoë"),
        ("We asked Grace’s team.", "Grace"),
    ],
)
def test_person_cues(text: str, name: str) -> None:
    assert (name, "person") in [(e.name, e.kind) for e in extract_entities(text)]


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("we moved from mysql to postgresql", ["mysql", "postgres"]),
        ("PYTHON, TypeScript and redis", ["python", "typescript", "redis"]),
        ("deploy with k8s and nats", ["kubernetes", "nats"]),
        ("I like Node.js, C++ and C#.", ["node.js", "c++", "c#"]),
        ("written in golang", ["go"]),
    ],
)
def test_tech_terms_are_case_insensitive_and_canonical(text: str, normalized: list[str]) -> None:
    entities = extract_entities(text)
    assert [e.normalized for e in entities] == normalized
    assert all(e.kind == "tech" for e in entities)


def test_ambiguous_tech_words_need_a_capital_mid_sentence() -> None:
    assert extract_entities("Go ahead and go home, the rust is bad.") == []
    assert kinds("I write Go and Rust, not React.") == [
        ("Go", "tech", "go"),
        ("Rust", "tech", "rust"),
        ("React", "tech", "react"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "The weather is nice. This is fine. I think so.",
        "Write a function. Explain it. Thanks for the help!",
        "See you on Monday in January.",
        "I'm here and I’ll stay, OK?",
        "what is 2024 about",
        "",
        "ALICE BOB CAROL DAVE ERIN FRANK alpha",
    ],
)
def test_no_entities(text: str) -> None:
    assert extract_entities(text) == []


def test_sentence_initial_common_word_does_not_start_a_name() -> None:
    assert kinds("The Beatles played in New York.") == [
        ("Beatles", "thing", "beatles"),
        ("New York", "thing", "new york"),
    ]


def test_names_separated_by_punctuation_are_separate() -> None:
    assert [e.name for e in extract_entities("I know Alice, Bob and Carol")] == [
        "Alice",
        "Bob",
        "Carol",
    ]


def test_long_title_case_runs_are_not_names() -> None:
    assert extract_entities("we read The Quick Brown Fox Jumps Over Dogs today") == []


def test_dedupe_by_normalized_name_keeps_first_spelling_and_strongest_kind() -> None:
    text = "Alice is here. Postgres is up. My friend alice? no: My friend Alice. I use postgresql."
    entities = extract_entities(text)
    assert entities == [
        Entity(name="Alice", kind="person", normalized="alice"),
        Entity(name="Postgres", kind="tech", normalized="postgres"),
    ]


def test_normalize_name() -> None:
    assert normalize_name("  New   York ") == "new york"
    assert normalize_name("ＰｏｓｔｇｒｅＳＱＬ") == "postgres"
    assert normalize_name("K8S") == "kubernetes"


def test_co_occurrences_count_texts_not_mentions() -> None:
    texts = [
        extract_entities("Alice uses Python and Redis. Alice loves Python."),
        extract_entities("Python with Redis."),
        extract_entities("nothing here"),
        extract_entities("Redis only."),
    ]
    assert co_occurrences(texts) == [
        ("python", "redis", 2),
        ("alice", "python", 1),
        ("alice", "redis", 1),
    ]


def test_co_occurrences_pairs_are_ordered_and_unique() -> None:
    a = Entity(name="Zed", kind="thing", normalized="zed")
    b = Entity(name="Amy", kind="person", normalized="amy")
    assert co_occurrences([[a, b, a]]) == [("amy", "zed", 1)]
    assert co_occurrences([]) == []
    assert co_occurrences([[a]]) == []
