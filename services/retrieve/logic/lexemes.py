"""Which words of a question the keyword tier matches on, for owners too large to rank every match.

Ranking reads every match's tsvector, so a common word makes a large owner's any-word query
expensive while BM25 gives that word little weight. Like MaxScore/WAND pruning, a large owner's
candidates are the memories holding *every* lexeme plus those holding a *rare* one (rarest first,
while the expected matches stay within ``budget``); every candidate is still ranked on all the
lexemes. Owners whose expected matches fit the budget keep the full any-word query. Expected
matches come from PostgreSQL's statistics (``pg_stats`` for ``memories.tsv`` and
``memories.owner``, ``term_stats``), which only estimate: a pruned plan that finds fewer than
``WIDEN_BELOW`` matches is widened (``widen_again``, ``match_plan``). ``keyword_plan`` makes the
whole decision from the ``websearch_to_tsquery`` text, so the tier passes constants and one
statement serves small and large owners alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: PostgreSQL's text search configuration of ``memories.tsv`` and of every question's lexemes
TS_CONFIG = "english"

#: ``websearch_to_tsquery`` output that is only lexemes joined by ``&`` (no phrase, negation, OR).
_LEXEME = r"'(?:[^']|'')*'"
_AND_ONLY = re.compile(rf"^{_LEXEME}(?: & {_LEXEME})*$")
_LEXEMES = re.compile(_LEXEME)


def quoted(lexeme: str) -> str:
    """A lexeme as it appears in a tsquery's text (``'it''s'``)."""
    return "'" + lexeme.replace("'", "''") + "'"


def unquoted_lexemes(tsquery_text: str) -> list[str]:
    """Every lexeme of a tsquery text whatever its operators, unquoted (``it's``), once each, in order."""
    return list(dict.fromkeys(m[1:-1].replace("''", "'") for m in _LEXEMES.findall(tsquery_text)))


def plain_lexemes(tsquery: str, lexemes: Sequence[str]) -> tuple[str, ...] | None:
    """The question's lexemes when its any-word query is an OR of exactly them (``tsquery``:
    ``websearch_to_tsquery`` as text; ``lexemes``: ``to_tsvector``'s of the same question), sorted;
    None for a negation or a phrase."""
    if "!" in tsquery or "<" in tsquery or set(unquoted_lexemes(tsquery)) != set(lexemes):
        return None
    return tuple(sorted(set(lexemes)))


def and_lexemes(tsquery_text: str) -> list[str] | None:
    """The quoted lexemes of an AND-only tsquery text (``'a' & 'b'``), deduplicated in order;
    None when it has any other operator (phrases, negations), so the caller keeps it as is."""
    text = tsquery_text.strip()
    if not text or not _AND_ONLY.match(text):
        return None
    return list(dict.fromkeys(_LEXEMES.findall(text)))


@dataclass(frozen=True)
class TermStats:
    """A snapshot of the planner statistics the pruning needs (all fractions of rows)."""

    rows: float  # pg_class.reltuples of memories
    lexeme_freq: Mapping[str, float]  # most common lexemes -> fraction of rows containing it
    rare_lexeme_freq: float  # assumed for a lexeme not in the list (PostgreSQL: half the minimum)
    owner_freq: Mapping[str, float]  # most common owners -> fraction of rows
    other_owner_freq: float  # assumed for any other owner (the rest spread over the other owners)

    def owner_rows(self, owner: str) -> float:
        return self.rows * self.owner_freq.get(owner, self.other_owner_freq)

    def expected_matches(self, lexeme: str, owner_rows: float) -> float:
        """Rows of an owner expected to contain ``lexeme`` (quoted, as in a tsquery text)."""
        return owner_rows * self.lexeme_freq.get(lexeme, self.rare_lexeme_freq)


EMPTY_STATS = TermStats(rows=0.0, lexeme_freq={}, rare_lexeme_freq=0.0, owner_freq={}, other_owner_freq=0.0)


@dataclass(frozen=True)
class MatchPlan:
    """``match``: the tsquery text that selects candidates; ``rank``: the one that scores them;
    ``pruned``: the lexemes left out of the match (the common ones), for tests and logs;
    ``best``: when pruned and a rare word kept, the tsquery texts of the best-ranked matches
    (every word), each a candidate set of its own, so a cap on the newest matches cannot drop
    them (without a rare word the match is that set); ``near``: in a widened plan, the tsquery
    text of the every-word-but-one matches (one candidate set: OR of the conjunctions), or ""."""

    match: str
    rank: str
    pruned: tuple[str, ...] = ()
    best: tuple[str, ...] = ()
    near: str = ""

    @property
    def sets(self) -> tuple[str, ...]:
        """The candidate sets of their own, besides ``match``: ``best``, then ``near``."""
        return (*self.best, self.near) if self.near else self.best


def never_pruned(stats: TermStats, owner: str, budget: float) -> bool:
    """Whether ``keyword_plan`` keeps every word of any question for this owner (pruning off, or
    the owner's rows fit the budget): then the plan needs no question text and the tier can turn
    the question into its OR query inside the search statement (``SQL_ANY_WORD``)."""
    return budget <= 0 or stats.owner_rows(owner) <= budget


#: ``keyword_plan``'s unpruned match in SQL, over ``t`` = the text of ``websearch_to_tsquery``:
#: a negation keeps its ANDs, otherwise every AND becomes an OR (phrases stay phrases); NULL
#: (matching nothing) when the question has no lexeme.
#: ``ts_rank_cd`` gives ``'a' | 'a'`` what it gives ``'a'`` (measured), so the duplicates
#: ``keyword_plan`` drops need no dropping here.
SQL_ANY_WORD = "(CASE WHEN t = '' THEN NULL WHEN strpos(t, '!') > 0 THEN t ELSE replace(t, ' & ', ' | ') END)"


#: by default a pruned plan that finds fewer matches than this (or than the tier's limit) is
#: widened: a default answer's worth (a retrieve request's ``limit`` defaults to 20)
WIDEN_BELOW = 20
#: the most widening steps of one search (each one more statement)
MAX_WIDENING = 3
#: the every-word-but-one set is built for questions of at most this many lexemes (it repeats
#: n - 1 of them n times); longer questions widen by their rarest left-out lexemes only
NEAR_MAX_LEXEMES = 8


def widen_again(plan: MatchPlan, found: int, enough: int, step: int) -> bool:
    """Whether a plan widened ``step`` times, which found ``found`` matches where ``enough``
    were wanted, is widened once more: it found too few and still leaves a lexeme out."""
    return bool(plan.pruned) and step < MAX_WIDENING and found < enough


def keyword_plan(tsquery_text: str, stats: TermStats, owner: str, budget: float, widen: int = 0) -> MatchPlan | None:
    """What the keyword tier matches and ranks for a question whose ``websearch_to_tsquery``
    text is ``tsquery_text``; None when it has no lexeme (only stop words or punctuation).

    Any of the words matches (their ANDs become ORs), pruned for a large owner when ``budget``
    > 0 and widened ``widen`` steps (``match_plan``); a query with a negation (``-word``) keeps
    its AND semantics, since ``x | !y`` would match nearly everything; phrases (``"new york"``)
    stay phrases.
    """
    text = tsquery_text.strip()
    if not text:
        return None
    lexemes = and_lexemes(text)
    if lexemes is None:
        kept = text if "!" in text else text.replace(" & ", " | ")
        return MatchPlan(match=kept, rank=kept)
    if never_pruned(stats, owner, budget):
        any_word = " | ".join(lexemes)
        return MatchPlan(match=any_word, rank=any_word)
    return match_plan(lexemes, stats, owner, budget, widen)


def match_plan(lexemes: Sequence[str], stats: TermStats, owner: str, budget: float, widen: int = 0) -> MatchPlan:
    """The candidate query for ``lexemes`` (quoted) of ``owner`` within ``budget`` expected
    matches, widened ``widen`` steps: the first adds the every-word-but-one set (``near``; for 3
    to ``NEAR_MAX_LEXEMES`` lexemes), each other step the rarest lexeme still left out."""
    any_word = " | ".join(lexemes)
    owner_rows = stats.owner_rows(owner)
    expected = {lex: stats.expected_matches(lex, owner_rows) for lex in lexemes}
    if len(lexemes) < 2 or sum(expected.values()) <= budget:
        return MatchPlan(match=any_word, rank=any_word)
    by_rarity = sorted(lexemes, key=lambda x: (expected[x], x))
    kept: list[str] = []
    spent = 0.0
    for lex in by_rarity:
        if spent + expected[lex] > budget:
            break
        kept.append(lex)
        spent += expected[lex]
    near = ""
    if widen and 2 < len(lexemes) <= NEAR_MAX_LEXEMES:
        near = " | ".join("( " + " & ".join(x for x in lexemes if x != left) + " )" for left in lexemes)
        widen -= 1
    kept += by_rarity[len(kept) : len(kept) + widen]
    every_word = "( " + " & ".join(lexemes) + " )"
    if len(kept) == len(lexemes):  # widened until nothing is left out
        return MatchPlan(match=any_word, rank=any_word, best=(every_word,), near=near)
    pruned = tuple(lex for lex in lexemes if lex not in kept)
    # with no rare word kept, the match is the every-word set itself: a second set would read
    # the same rows again (measured on a 100k-memory owner: 15.9 -> 9.4 ms for 1,816 matches)
    best = (every_word,) if kept else ()
    return MatchPlan(match=" | ".join([every_word, *kept]), rank=any_word, pruned=pruned, best=best, near=near)
