"""The rule extractor's patterns: acceptance example, every variant, negation, boundaries."""

import pytest

from services.extract.logic.rules import Fact, extract_facts, fact_key

ACCEPTANCE = (
    "I prefer TypeScript. I'll use Postgres for this project. I always commit before pushing. I don't like Python."
)


def only(text: str) -> Fact:
    facts = extract_facts(text)
    assert len(facts) == 1, facts
    return facts[0]


def test_acceptance_example_yields_exactly_four_facts() -> None:
    assert extract_facts(ACCEPTANCE) == [
        Fact(
            category="preference",
            memory_type="factual",
            key="preference:typescript",
            content="User prefers TypeScript",
            subject="TypeScript",
            polarity="positive",
        ),
        Fact(
            category="decision",
            memory_type="episodic",
            key="decision:postgres_for_this_project",
            content="User will use Postgres for this project",
            subject="Postgres for this project",
            polarity="positive",
        ),
        Fact(
            category="pattern",
            memory_type="factual",
            key="pattern:commit_before_pushing",
            content="User always commits before pushing",
            subject="commit before pushing",
            polarity="positive",
        ),
        Fact(
            category="preference",
            memory_type="factual",
            key="preference:python",
            content="User does not like Python",
            subject="Python",
            polarity="negative",
        ),
    ]


@pytest.mark.parametrize(
    ("text", "content", "polarity"),
    [
        ("I prefer Neovim", "User prefers Neovim", "positive"),
        ("I really prefer Neovim", "User really prefers Neovim", "positive"),
        ("I like Neovim", "User likes Neovim", "positive"),
        ("I love Neovim", "User loves Neovim", "positive"),
        ("I hate Neovim", "User hates Neovim", "negative"),
        ("I dislike Neovim", "User dislikes Neovim", "negative"),
        ("I avoid Neovim", "User avoids Neovim", "negative"),
        ("I don't like Neovim", "User does not like Neovim", "negative"),
        ("I do not like Neovim", "User does not like Neovim", "negative"),
        ("I dont like Neovim", "User does not like Neovim", "negative"),
        ("I don’t love Neovim", "User does not love Neovim", "negative"),
        ("I don't prefer Neovim", "User does not prefer Neovim", "negative"),
        ("I don't really like Neovim", "User does not really like Neovim", "negative"),
    ],
)
def test_preference_variants(text: str, content: str, polarity: str) -> None:
    fact = only(text + ".")
    assert (fact.category, fact.memory_type) == ("preference", "factual")
    assert fact.key == "preference:neovim"
    assert fact.subject == "Neovim"
    assert fact.content == content
    assert fact.polarity == polarity


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("My favorite editor is Neovim", "User's favorite editor is Neovim"),
        ("my favourite editor is Neovim!", "User's favorite editor is Neovim"),
        ("My favorite is Neovim", "User's favorite is Neovim"),
        ("My favorite text editors are Neovim", "User's favorite text editors are Neovim"),
    ],
)
def test_favorite_variants(text: str, content: str) -> None:
    fact = only(text)
    assert (fact.category, fact.memory_type, fact.polarity) == ("preference", "factual", "positive")
    assert (fact.key, fact.subject, fact.content) == ("preference:neovim", "Neovim", content)


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I'll use Redis", "User will use Redis"),
        ("I’ll use Redis", "User will use Redis"),
        ("I will use Redis", "User will use Redis"),
        ("I chose Redis", "User chose Redis"),
        ("I decided to use Redis", "User decided to use Redis"),
        ("I went with Redis", "User went with Redis"),
        ("I'm going to adopt Redis", "User is going to adopt Redis"),
        ("I am going to adopt Redis", "User is going to adopt Redis"),
    ],
)
def test_decision_variants(text: str, content: str) -> None:
    fact = only(text + ".")
    assert (fact.category, fact.memory_type, fact.polarity) == ("decision", "episodic", "positive")
    assert (fact.key, fact.subject, fact.content) == ("decision:redis", "Redis", content)


def test_decided_to_without_use_keeps_the_action() -> None:
    fact = only("I decided to rewrite the parser.")
    assert fact.key == "decision:rewrite_the_parser"
    assert fact.content == "User decided to rewrite the parser"


@pytest.mark.parametrize(
    ("text", "content", "polarity"),
    [
        ("I usually write tests first", "User usually writes tests first", "positive"),
        ("I always write tests first", "User always writes tests first", "positive"),
        ("I never write tests first", "User never writes tests first", "negative"),
        ("I tend to write tests first", "User tends to write tests first", "positive"),
    ],
)
def test_habit_variants(text: str, content: str, polarity: str) -> None:
    fact = only(text + ".")
    assert (fact.category, fact.memory_type) == ("pattern", "factual")
    assert fact.key == "pattern:write_tests_first"
    assert (fact.content, fact.polarity) == (content, polarity)


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I always push to main", "User always pushes to main"),
        ("I usually go home early", "User usually goes home early"),
        ("I usually try again", "User usually tries again"),
        ("I usually have tea", "User usually has tea"),
        ("I usually just run the tests", "User usually just runs the tests"),
        ("I never liked meetings", "User never liked meetings"),
    ],
)
def test_habit_content_is_third_person(text: str, content: str) -> None:
    assert only(text).content == content


@pytest.mark.parametrize(
    "text",
    ["I PREFER TYPESCRIPT", "i prefer typescript", "I Prefer TypeScript", "I  prefer\tTypeScript"],
)
def test_matching_is_case_insensitive(text: str) -> None:
    assert only(text).key == "preference:typescript"


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("I prefer Rust, but only for CLIs", "Rust"),
        ("I prefer Rust; it is fast", "Rust"),
        ("I prefer Rust, because it is fast", "Rust"),
        ("I chose Rust because it is fast", "Rust"),
        ("I prefer Rust - mostly", "Rust"),
        ("I prefer Rust...", "Rust"),
        ("I prefer Rust!!", "Rust"),
        ("I prefer Rust…", "Rust"),
    ],
)
def test_object_ends_at_clause_boundary_and_trailing_punctuation(text: str, subject: str) -> None:
    assert only(text).subject == subject


def test_comparison_keeps_content_but_keys_on_the_preferred_thing() -> None:
    fact = only("I really prefer tabs over spaces.")
    assert fact.key == "preference:tabs"
    assert fact.subject == "tabs"
    assert fact.content == "User really prefers tabs over spaces"


def test_sentences_split_on_punctuation_and_newlines() -> None:
    facts = extract_facts("I like Kotlin! I hate Scala\nI always rebase? no\nI never merge main")
    assert [(f.key, f.polarity) for f in facts] == [
        ("preference:kotlin", "positive"),
        ("preference:scala", "negative"),
        ("pattern:merge_main", "negative"),
    ]


def test_dotted_names_are_not_sentence_breaks() -> None:
    assert only("I prefer Node.js and Python 3.11 today.").subject == "Node.js and Python 3.11 today"


def test_two_triggers_in_one_sentence_give_two_facts() -> None:
    facts = extract_facts("I usually go to the gym and I hate running")
    assert [(f.key, f.content) for f in facts] == [
        ("pattern:go_to_the_gym", "User usually goes to the gym"),
        ("preference:running", "User hates running"),
    ]


def test_back_to_back_triggers_do_not_swallow_each_other() -> None:
    facts = extract_facts("I like tea I hate coffee")
    assert [(f.key, f.polarity) for f in facts] == [
        ("preference:tea", "positive"),
        ("preference:coffee", "negative"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Should I use Redis?",
        "Do you think I prefer TypeScript?",
        "I'd like a coffee.",
        "I would like to order pizza.",
        "I don't hate Java.",
        "Unlike Java, it works.",
        "Alike I prefer",
        "I like it.",
        "I like that.",
        "I love this!",
        "I'll use them.",
        "I prefer ...",
        "",
        "   \n\n  ",
    ],
)
def test_no_fact(text: str) -> None:
    assert extract_facts(text) == []


def test_subject_reproduces_key_for_every_fact() -> None:
    text = ACCEPTANCE + " My favorite editor is Vim. I prefer tabs over spaces. I went with NATS."
    facts = extract_facts(text)
    assert len(facts) == 7
    assert all(f.key == fact_key(f.category, f.subject) for f in facts)


def test_assistant_like_text_is_extracted_like_any_text() -> None:
    # Role filtering is the caller's job; the extractor sees only text.
    fact = only("As an AI assistant, I prefer concise answers.")
    assert fact.key == "preference:concise_answers"
