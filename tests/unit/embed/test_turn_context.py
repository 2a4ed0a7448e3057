"""The text a memory is embedded as (with its stored context head), and how the signature names it.
The head's format itself is tested against the database: tests/integration/platform/test_turn_context_trigger.py."""

from __future__ import annotations

from memoryd.schemas.base import MAX_CONTENT_CHARS
from services.embed.logic import embed_text, parse_signature
from shared.turn_context import TURN_CONTEXT_TAG, context_text
from shared.vectors.signature import stored_signature, turn_context, with_turn_context, without_turn_context

SIG = "local:all-MiniLM-L6-v2:384:turn1"


def test_a_memory_is_embedded_with_its_stored_context_under_a_context_signature() -> None:
    """The embed text is the text ``tsv`` indexes, ``context || ' ' || content`` (migration 0015)."""
    head = "[1:56 pm on 8 May, 2023] Ann:"
    assert embed_text("hi", head, SIG) == "[1:56 pm on 8 May, 2023] Ann: hi" == context_text("hi", head)
    assert embed_text("Ann likes tea", None, SIG) == "Ann likes tea"  # facts, direct memories: no context
    assert embed_text("[8 May 2023] Ann: hi", None, SIG) == "[8 May 2023] Ann: hi"  # a prefixed turn has none
    assert embed_text("hi", "", SIG) == "hi"
    # an older signature (no tag) keeps embedding the text as stored, so its vectors stay comparable
    assert embed_text("hi", head, "local:all-MiniLM-L6-v2:384") == "hi"
    assert embed_text("hi", head, f"{SIG}:half") == "[1:56 pm on 8 May, 2023] Ann: hi"


def test_a_truncated_turn_keeps_its_context_first_and_its_text_whole() -> None:
    text = "w" * MAX_CONTENT_CHARS  # stored content is cut to this; the model cuts its tokens from the end
    head = "[1:56 pm on 8 May, 2023] Ann:"
    out = embed_text(text, head, SIG)
    assert out.startswith(head + " w") and out.endswith(text) and len(out) == len(head) + 1 + len(text)


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
