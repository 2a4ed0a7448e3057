"""The context text a chat turn is embedded as, and how the signature names it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from memoryd.schemas.base import MAX_CONTENT_CHARS
from services.embed.logic import embed_text, parse_signature
from shared.turn_context import TURN_CONTEXT_TAG, has_context, said_on, turn_context_head, turn_context_text
from shared.vectors.signature import stored_signature, turn_context, with_turn_context, without_turn_context

MAY_8 = datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)
SIG = "local:all-MiniLM-L6-v2:384:turn1"


def test_a_turn_reads_day_speaker_text() -> None:
    assert turn_context_text("I went to a support group.", MAY_8, "Caroline", "user") == (
        "[1:56 pm on 8 May, 2023] Caroline: I went to a support group."
    )


def test_the_head_alone_is_what_the_text_opens_with() -> None:
    """What ingest stores in ``memories.context``: the head, None for a text carrying it already."""
    assert turn_context_head("I went.", MAY_8, "Caroline", "user") == "[1:56 pm on 8 May, 2023] Caroline:"
    assert turn_context_head("I went.", MAY_8, None, "assistant") == "[1:56 pm on 8 May, 2023] Assistant:"
    assert turn_context_head("I went.", None, None, None) is None
    assert turn_context_head("[1:56 pm on 8 May, 2023] Caroline: I went.", MAY_8, "Caroline", "user") is None
    for text, speaker, role in [("I went.", "Mel", "user"), ("ok", None, "assistant"), ("[x] y", None, None)]:
        head = turn_context_head(text, MAY_8, speaker, role)
        assert turn_context_text(text, MAY_8, speaker, role) == (f"{head} {text}" if head else text)


def test_the_time_is_utc_in_twelve_hours_without_leading_zeros() -> None:
    assert said_on(datetime(2024, 1, 2, 23, 30, tzinfo=UTC)) == "11:30 pm on 2 January, 2024"
    # 23:30 at UTC-2 is the next day in UTC, the time every stored time is kept in
    assert said_on(datetime(2024, 1, 2, 23, 30, tzinfo=timezone(timedelta(hours=-2)))) == "1:30 am on 3 January, 2024"
    assert said_on(datetime(2024, 1, 2, 23, 30)) == "11:30 pm on 2 January, 2024"  # naive = UTC
    assert said_on(datetime(2024, 1, 2, 0, 5, tzinfo=UTC)) == "12:05 am on 2 January, 2024"
    assert said_on(datetime(2024, 1, 2, 12, 0, tzinfo=UTC)) == "12:00 pm on 2 January, 2024"


def test_missing_speaker_falls_back_to_the_role_then_to_nothing() -> None:
    assert turn_context_text("Hi", MAY_8, None, "user") == "[1:56 pm on 8 May, 2023] User: Hi"
    assert turn_context_text("Sure.", MAY_8, None, "assistant") == "[1:56 pm on 8 May, 2023] Assistant: Sure."
    assert turn_context_text("Hi", MAY_8, "  ", None) == "[1:56 pm on 8 May, 2023] Hi"
    assert turn_context_text("Hi", None, "Ann", "user") == "Ann: Hi"
    assert turn_context_text("Hi", None, None, None) == "Hi"


def test_an_assistant_turn_with_a_name_says_the_name() -> None:
    assert turn_context_text("Noted.", MAY_8, "Tutor Bot", "assistant") == "[1:56 pm on 8 May, 2023] Tutor Bot: Noted."


def test_a_long_or_spaced_speaker_name_is_tidied_and_cut() -> None:
    assert turn_context_text("x", MAY_8, " Ann \n  Lee ", "user") == "[1:56 pm on 8 May, 2023] Ann Lee: x"
    assert turn_context_text("x", MAY_8, "N" * 500, "user") == f"[1:56 pm on 8 May, 2023] {'N' * 64}: x"


def test_an_already_prefixed_turn_is_not_prefixed_twice() -> None:
    text = "[1:56 pm on 8 May, 2023] Caroline: I went to a support group."
    assert has_context(text)
    assert turn_context_text(text, MAY_8, "Caroline", "user") == text
    assert turn_context_text("[8 May 2023] Ann: hi", MAY_8, "Ann", "user") == "[8 May 2023] Ann: hi"  # any date form
    # brackets that are not a date and speaker do not count
    for plain in ("[link] see above", "[x]: y", "Note: [8 May] was fine", "[8 May]\nBob: hi", "[link] Bob: hi"):
        assert not has_context(plain), plain
        assert turn_context_text(plain, MAY_8, "Bob", "user") == f"[1:56 pm on 8 May, 2023] Bob: {plain}"


def test_a_truncated_turn_keeps_its_context_first_and_its_text_whole() -> None:
    text = "w" * MAX_CONTENT_CHARS  # stored content is cut to this; the model cuts its tokens from the end
    out = turn_context_text(text, MAY_8, "Ann", "user")
    head = "[1:56 pm on 8 May, 2023] Ann: "
    assert out.startswith(head + "w") and out.endswith(text) and len(out) == len(head) + len(text)


def test_embed_text_only_for_raw_turns_under_a_context_signature() -> None:
    assert embed_text("hi", "chat_turn", SIG, MAY_8, "Ann", "user") == "[1:56 pm on 8 May, 2023] Ann: hi"
    for source in ("api", "rule", "llm", "sleep", "import"):  # facts and direct memories as stored
        assert embed_text("Ann likes tea", source, SIG, MAY_8, "Ann", "user") == "Ann likes tea"
    # an older signature (no tag) keeps embedding the text as stored, so its vectors stay comparable
    assert embed_text("hi", "chat_turn", "local:all-MiniLM-L6-v2:384", MAY_8, "Ann", "user") == "hi"
    assert embed_text("hi", "chat_turn", f"{SIG}:half", MAY_8, "Ann", "user") == "[1:56 pm on 8 May, 2023] Ann: hi"


def test_the_tag_sits_before_the_storage_and_parses_out() -> None:
    base = "local:all-MiniLM-L6-v2:384"
    assert with_turn_context(base) == f"{base}:{TURN_CONTEXT_TAG}" == SIG
    assert with_turn_context(SIG) == SIG
    assert with_turn_context(f"{base}:half") == f"{SIG}:half"
    assert stored_signature(with_turn_context(base), "half") == f"{SIG}:half"
    assert without_turn_context(f"{SIG}:half") == f"{base}:half"
    assert without_turn_context(base) == base
    assert turn_context(SIG) and turn_context(f"{SIG}:half") and not turn_context(base)
    assert not turn_context("remote:turn1:768")  # a model named like the tag is not the tag
    parts = parse_signature(f"{base}:dynamic-int8:turn1:half")
    assert parts is not None
    assert (parts.model, parts.dim, parts.quantization, parts.storage, parts.turn_context) == (
        "all-MiniLM-L6-v2",
        384,
        "dynamic-int8",
        "half",
        True,
    )
    old = parse_signature(base)
    assert old is not None and (old.quantization, old.turn_context) == (None, False)
    remote = parse_signature("remote:nomic-embed-text:latest:768:turn1")
    assert remote is not None
    assert (remote.model, remote.dim, remote.turn_context) == ("nomic-embed-text:latest", 768, True)
