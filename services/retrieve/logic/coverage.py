"""How much of a question the keyword tier's best match covers, and the full-text weight that earns.

Score fusion min-max normalises each list, so the best keyword match always scores 1.0, even
when it shares a single word with the question (a paraphrase shares at most an entity name:
then every memory naming it ties at the top and the keyword list is noise that pushes the
vector tier's good answer down). ``ts_rank_cd`` of the keyword tier's any-word query gives
0.1 per occurrence of a query word in a memory (cover density, no length normalisation), so
the best match's raw score over 0.1 x the question's content words is the share of the question
it covers. ``keyword_weight`` scales ``ftsWeight`` by that share: in full from ``full_at``
upwards, below it by ``(coverage / full_at) ** power`` (``full_at`` 0 turns it off).

Content words are counted as PostgreSQL's ``english`` configuration does not drop them: the
question's casefolded ``\\w+`` words less its stop words (``STOPWORDS``, the list of
``tsearch_data/english.stop``), each counted once.
"""

from __future__ import annotations

import math

from services.retrieve.logic.fusion import query_words

_ENGLISH_STOP = (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her "
    "hers herself it its itself they them their theirs themselves what which who whom this that these "
    "those am is are was were be been being have has had having do does did doing a an the and but if or "
    "because as until while of at by for with about against between into through during before after "
    "above below to from up down in out on off over under again further then once here there when where "
    "why how all any both each few more most other some such no nor not only own same so than too very s "
    "t can will just don should now"
)
#: PostgreSQL's ``english`` stop words (``tsearch_data/english.stop``): no lexeme, never matched.
STOPWORDS = frozenset(_ENGLISH_STOP.split())
#: ``ts_rank_cd`` of an any-word (OR) query: what one occurrence of one query word adds.
RANK_PER_WORD = 0.1


def content_words(query: str) -> int:
    """The distinct words of ``query`` the keyword tier can match (its stop words left out)."""
    return len(query_words(query) - STOPWORDS)


def coverage(top_score: float, query: str) -> float:
    """The share (0..1) of the question's content words the best keyword match holds, read from
    its raw ``ts_rank_cd``: 0 without a match (or a non-finite score); 1 for a match to a question
    with no word counted here (a word PostgreSQL parses otherwise: nothing to judge it by)."""
    if not math.isfinite(top_score) or top_score <= 0:
        return 0.0
    words = content_words(query)
    return 1.0 if words == 0 else min(1.0, top_score / (RANK_PER_WORD * words))


def keyword_weight(weight: float, top_score: float, query: str, full_at: float, power: float) -> float:
    """``weight`` scaled by how much of ``query`` the best keyword match (raw ``top_score``)
    covers: unchanged when the coverage reaches ``full_at`` (or ``full_at`` is 0: off), else
    times ``(coverage / full_at) ** power``."""
    if not (math.isfinite(full_at) and 0 <= full_at <= 1):
        raise ValueError(f"full_at must be within 0..1, got {full_at}")
    if not (math.isfinite(power) and power >= 0):
        raise ValueError(f"power must be finite and >= 0, got {power}")
    if full_at == 0:
        return weight
    share = coverage(top_score, query) / full_at
    return weight if share >= 1 else weight * share**power
