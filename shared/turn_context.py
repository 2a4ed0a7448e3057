"""A raw chat turn's context: when it was said and who said it, kept with the turn.

A turn is stored as the application sent it (the bare text); embedded or searched alone, "I went
there last week" carries neither who nor when. ``memories.context`` holds the turn's head,
``"[1:56 pm on 8 May, 2023] Caroline:"``, defined once, in SQL (``turn_context_head``, migration
0016): a trigger fills it for a turn written without one and derives it again when the turn's text
or speaker is edited, so every writer (an ingest of any version, import, an edit) gets the same
head and no service computes it. The keyword side indexes ``context || ' ' || content`` and the embed service
embeds ``context_text``, the same text. ``TURN_CONTEXT_TAG`` names the format in the embedding
signature (``shared.vectors.signature``): a change of format is a signature change and reindexes.
"""

from __future__ import annotations

#: this format's name in an embedding signature (change it whenever the head's format changes)
TURN_CONTEXT_TAG = "turn1"


def context_text(content: str, context: str | None) -> str:
    """``"[1:56 pm on 8 May, 2023] Caroline: <content>"``: a memory with its context head, as the
    keyword side indexes it; ``content`` alone when it has none."""
    return f"{context} {content}" if context else content
