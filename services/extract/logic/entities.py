"""Rule-based entity pass: names and known tech terms in text, plus their co-occurrences.

Pure and deterministic like `logic.py`. Entities feed the `entities` table and the sleep
worker's relation completion, which starts from pairs seen in the same text. Rules, not a
model: capitalised word runs are names (person when a cue word says so, else thing),
a small curated vocabulary gives tech terms; precision matters more than recall here.
"""

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from itertools import combinations
from typing import Final, Literal

import msgspec

from services.extract.logic.rules import clip_to_tail, split_sentences

EntityKind = Literal["person", "tech", "thing"]


class Entity(msgspec.Struct, frozen=True, kw_only=True):
    """One entity; `normalized` is the dedupe key (tech terms use a canonical name)."""

    name: str  # as first written, e.g. "PostgreSQL"
    kind: EntityKind
    normalized: str  # e.g. "postgres"


# Lowercase spelling -> canonical normalized name.
TECH_TERMS: Final[dict[str, str]] = {
    **{term: term for term in (
        "python", "typescript", "javascript", "postgres", "redis", "nats", "docker",
        "kubernetes", "react", "rust", "go", "java", "kotlin", "swift", "ruby", "rails",
        "django", "flask", "fastapi", "sqlite", "mysql", "mongodb", "kafka", "rabbitmq",
        "qdrant", "pgvector", "graphql", "grpc", "terraform", "ansible", "aws", "gcp",
        "azure", "linux", "git", "github", "gitlab", "vim", "neovim", "emacs", "vscode",
        "nginx", "node.js", "deno", "c++", "c#", "haskell", "elixir", "scala", "php",
        "lua", "zig", "numpy", "pandas", "pytorch", "tensorflow", "onnx", "asyncio",
        "msgspec", "pydantic", "vue", "svelte", "angular", "elasticsearch", "clickhouse",
        "airflow", "spark", "helm", "prometheus", "grafana", "sql", "openai",
    )},
    "postgresql": "postgres", "golang": "go", "k8s": "kubernetes", "nodejs": "node.js",
    "ts": "typescript", "js": "javascript", "py": "python", "nvim": "neovim",
}  # fmt: skip
# Tech terms that are also everyday words: only when capitalised mid-sentence ("I like Go").
_AMBIGUOUS_TECH: Final = frozenset({"go", "rust", "react", "swift", "ruby", "rails", "spark"})


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_MONTHS_DAYS: Final = _words(
    "january february march april may june july august september october november "
    "december monday tuesday wednesday thursday friday saturday sunday"
)
# Never a name, wherever it stands.
_NEVER_NAMES: Final = _MONTHS_DAYS | _words("i i'm i'll i've i'd ok okay mr mrs ms dr prof sir user assistant")
# Capitalised only because they start a sentence: pronouns, determiners, conjunctions,
# prepositions, auxiliaries, question words, greetings, common imperatives.
_SENTENCE_STARTERS: Final = _words(
    """the a an this that these those it its it's my our your his her their we you he she
    they me us them there here what when where why how who which whose if then but and or
    so because although though also however yes no not maybe sure thanks thank please hi
    hello hey ok well now today yesterday tomorrow tonight after before since while for
    from in on at by with without about as to of do does did don't is are was were be
    been can could would should will shall may might must let let's just actually
    basically honestly anyway sometimes usually always never often again all some any
    every each both many most more one two write explain create make give show tell help
    fix add use generate summarize translate list find check try run build compare
    describe remember note keep set update remove delete consider imagine suppose see look
    wait go get put take start stop open read send call ask think need want like love hope
    okay good great nice cool oh ah wow perfect awesome right exactly really very only even
    still instead first next finally last other another such same none nothing everything
    something anything someone everyone"""
)
_PERSON_BEFORE: Final = _words(
    """met meet told asked emailed texted thank thanks friend colleague coworker boss
    manager wife husband girlfriend boyfriend brother sister mom dad mother father son
    daughter mr mrs ms dr prof uncle aunt cousin"""
)
_PERSON_AFTER: Final = _words(
    "said says told asked met called thinks thought wants wanted mentioned wrote replied suggested"
)
_MAX_NAME_WORDS: Final = 5
_KIND_RANK: Final[dict[EntityKind, int]] = {"thing": 0, "person": 1, "tech": 2}
# After these (a colon, a quote, a bullet) a word is capitalised as if it began a sentence.
_OPENERS: Final = frozenset(':"“‘(*•>—–-')
_TOKEN = re.compile(r"[^\W_](?:[\w'’.+#-]*[\w+#])?")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


def normalize_name(name: str) -> str:
    """Dedupe key of a name: NFKC, casefold, whitespace collapsed, tech aliases resolved."""
    folded = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    return TECH_TERMS.get(folded, folded)


def _tech(word: str, sentence_initial: bool) -> str | None:
    low = word.casefold()
    canonical = TECH_TERMS.get(low)
    if canonical is None:
        return None
    if low in _AMBIGUOUS_TECH and (sentence_initial or not word[0].isupper()):
        return None
    return canonical


def _is_name_word(word: str, sentence_initial: bool) -> bool:
    low = word.casefold().replace("’", "'")
    if len(word) < 2 or not word[0].isupper() or low in _NEVER_NAMES:
        return False
    return not (sentence_initial and low in _SENTENCE_STARTERS)


def _entities_in_sentence(sentence: str) -> list[Entity]:
    tokens = list(_TOKEN.finditer(sentence))
    words = [_POSSESSIVE.sub("", token.group()) for token in tokens]
    found: list[Entity] = []
    run: list[int] = []  # indices of the current capitalised run

    def flush() -> None:
        if not run or len(run) > _MAX_NAME_WORDS:  # a long Title Case run is a heading
            run.clear()
            return
        before = words[run[0] - 1].casefold() if run[0] > 0 else ""
        after = words[run[-1] + 1].casefold() if run[-1] + 1 < len(words) else ""
        person = before in _PERSON_BEFORE or after in _PERSON_AFTER
        name = " ".join(words[i] for i in run)
        found.append(Entity(name=name, kind="person" if person else "thing", normalized=normalize_name(name)))
        run.clear()

    for index, word in enumerate(words):
        gap = sentence[tokens[index - 1].end() : tokens[index].start()] if index else ""
        initial = index == 0 or any(char in _OPENERS for char in gap)
        canonical = _tech(word, initial)
        if canonical is not None:
            flush()
            found.append(Entity(name=word, kind="tech", normalized=canonical))
            continue
        if not _is_name_word(word, initial):
            flush()
            continue
        adjacent = bool(run) and sentence[tokens[run[-1]].end() : tokens[index].start()] == " "
        if run and not adjacent:
            flush()
        run.append(index)
    flush()
    return found


def extract_entities(text: str) -> list[Entity]:
    """Entities in `text`, one per normalized name, in order of first mention.

    The first spelling is kept as `name`; the kind is the strongest seen (tech > person >
    thing), so "Alice" mentioned once as a plain name and once as "my friend Alice" is a
    person. Input over 64 KiB is cut to its tail, as in fact extraction.
    """
    by_name: dict[str, Entity] = {}
    for sentence in split_sentences(clip_to_tail(text)):
        for entity in _entities_in_sentence(sentence):
            seen = by_name.get(entity.normalized)
            if seen is None:
                by_name[entity.normalized] = entity
            elif _KIND_RANK[entity.kind] > _KIND_RANK[seen.kind]:
                by_name[entity.normalized] = msgspec.structs.replace(seen, kind=entity.kind)
    return list(by_name.values())


def co_occurrences(entities_per_text: Iterable[Iterable[Entity]]) -> list[tuple[str, str, int]]:
    """Pairs of normalized names seen in the same text, with the number of such texts.

    Each pair is `(a, b, count)` with `a < b`; a pair counts once per text however often
    it repeats there. Sorted by count (highest first), then names, so output is stable.
    """
    counts: Counter[tuple[str, str]] = Counter()
    for entities in entities_per_text:
        names = sorted({entity.normalized for entity in entities})
        counts.update(combinations(names, 2))
    return sorted(((a, b, n) for (a, b), n in counts.items()), key=lambda item: (-item[2], item[0], item[1]))
