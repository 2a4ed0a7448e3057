"""Rule-based fact extraction: text in, `Fact` structs out, no I/O.

The extract service runs these rules on every new user turn (docs/design.md, "Extraction"):
preference, decision and habit sentences become facts with a stable upsert key
(`fact_key`). Everything here is pure and deterministic so the handler stays thin and
the rules are tested without NATS or Postgres. Choosing which roles to feed in is the
caller's job ("I prefer X" in an assistant reply is the assistant speaking).
"""

import hashlib
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final, Literal, NamedTuple

import msgspec

Category = Literal["preference", "decision", "pattern"]
MemoryType = Literal["factual", "episodic"]
Polarity = Literal["positive", "negative"]

MIN_CONTENT_CHARS: Final = 3
MAX_CONTENT_CHARS: Final = 500
MAX_INPUT_BYTES: Final = 64 * 1024
MAX_KEY_CHARS: Final = 80


class Fact(msgspec.Struct, frozen=True, kw_only=True):
    """One extracted fact; `key == fact_key(category, subject)`."""

    category: Category
    memory_type: MemoryType
    key: str
    content: str  # readable sentence shown by retrieval, e.g. "User prefers TypeScript"
    subject: str  # what the fact is about, as written, e.g. "TypeScript"
    polarity: Polarity = "positive"


# --- sentences and objects -------------------------------------------------------------

# A sentence ends at . ! ? or an ellipsis followed by whitespace, or at a line break, so
# "Node.js" and "3.11" stay whole.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+|[\r\n]+")
# Where the captured object X ends inside a sentence: "; ", ", but", " because", " and I".
_CLAUSE_BOUNDARY = re.compile(
    r";|\s[—–-]\s"
    r"|,\s*(?:but|and|so|or|although|though|because|since|while|whereas|which)\b"
    r"|\s+(?:but|because|although|though|whereas)\b"
    r"|\s+(?:and|or|so)\s+I\b",
    re.IGNORECASE,
)
_TRAILING_PUNCT = ".,;:!?…"
_DANGLING_CONJUNCTION = re.compile(r"[\s,]+(?:and|or|but|so|then)$", re.IGNORECASE)
# "I prefer X over Y": the key is about X; the content keeps the comparison.
_COMPARISON = re.compile(r"\s+(?:over|rather\s+than|instead\s+of|more\s+than)\s+", re.IGNORECASE)
# Objects that say nothing on their own ("I like that").
_VAGUE_OBJECTS: Final = frozenset(
    {"it", "this", "that", "them", "these", "those", "him", "her", "you", "one", "so", "too"}
)
_KEY_FILLER: Final = frozenset({"to", "the", "a", "an"})
_NON_ALNUM = re.compile(r"[\W_]+")
_HAS_ALNUM = re.compile(r"[^\W_]")


def split_sentences(text: str) -> list[str]:
    """Split on . ! ? (when followed by whitespace) and line breaks; drop empty parts."""
    return [part.strip() for part in _SENTENCE_BREAK.split(text) if part.strip()]


def clip_to_tail(text: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """Return the last `max_bytes` bytes of `text` as UTF-8, cut on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    tail = data[-max_bytes:]
    start = 0
    while start < len(tail) and tail[start] & 0xC0 == 0x80:  # skip continuation bytes
        start += 1
    return tail[start:].decode("utf-8", "surrogatepass")


def normalize_content(text: str) -> str | None:
    """Trim and collapse whitespace; None unless 3..500 characters remain."""
    collapsed = " ".join(text.split())
    if MIN_CONTENT_CHARS <= len(collapsed) <= MAX_CONTENT_CHARS:
        return collapsed
    return None


def fact_key(category: str, text: str) -> str:
    """Stable upsert key, e.g. `fact_key("preference", "TypeScript") == "preference:typescript"`.

    NFKC + casefold, runs of non-alphanumerics become one `_`, leading "to/the/a/an" are
    dropped. A slug that would make the key longer than 80 characters is cut and given an
    8-hex sha256 suffix of the full slug, so distinct long texts keep distinct keys.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = [word for word in _NON_ALNUM.split(folded) if word]
    while len(words) > 1 and words[0] in _KEY_FILLER:
        words.pop(0)
    slug = "_".join(words)
    if not slug:  # nothing alphanumeric: still deterministic, never an empty key
        slug = "h" + hashlib.sha256(folded.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    budget = MAX_KEY_CHARS - len(category) - 1
    if len(slug) > budget:
        digest = hashlib.sha256(slug.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        slug = slug[: budget - len(digest) - 1].rstrip("_") + "_" + digest
    return f"{category}:{slug}"


#: The longest agent id an agent's fact key holds as it is; a longer one is named by its hash.
MAX_AGENT_IN_KEY = 100


def agent_key(key: str, agent_id: str | None) -> str:
    """The upsert key of a fact an agent's conversation stated: each agent of an owner keeps its
    own copy (``preference:typescript@agent:support``); without an agent, the key itself."""
    if agent_id is None:
        return key
    if len(agent_id) > MAX_AGENT_IN_KEY:
        agent_id = "h" + hashlib.sha256(agent_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{key}@agent:{agent_id}"


def _third_person(phrase: str) -> str:
    """'commit before pushing' -> 'commits before pushing' (first verb only, best effort)."""
    first, _, rest = phrase.partition(" ")
    low = first.lower()
    if low in {"just", "also", "still", "only", "really", "even", "first"} and rest:
        return f"{first} {_third_person(rest)}"
    irregular = {"have": "has", "do": "does", "go": "goes", "am": "is", "be": "is"}
    if low in irregular:
        verb = irregular[low]
    elif not first.isalpha() or not first.islower() or low.endswith(("ed", "s")):
        verb = first  # not a plain lowercase base verb: leave it alone
    elif low in {"can", "could", "will", "would", "should", "must", "may", "might"}:
        verb = first
    elif low.endswith(("sh", "ch", "x", "z", "o")):
        verb = first + "es"
    elif len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        verb = first[:-1] + "ies"
    else:
        verb = first + "s"
    return f"{verb} {rest}" if rest else verb


# --- rules ---------------------------------------------------------------------------

_APOS = "['’]"


class _Rule(NamedTuple):
    pattern: re.Pattern[str]
    category: Category
    memory_type: MemoryType
    # match -> (polarity, content prefix, whether to conjugate the object's first verb)
    render: Callable[[re.Match[str]], tuple[Polarity, str, bool]]


def _verb(match: re.Match[str]) -> str:
    return " ".join(match.group("verb").lower().split())


def _preference(match: re.Match[str]) -> tuple[Polarity, str, bool]:
    verb = _verb(match)
    really = "really " if match.group("really") else ""
    polarity: Polarity = "negative" if verb in {"hate", "dislike", "avoid"} else "positive"
    return polarity, f"User {really}{verb}s", False


def _negated_preference(match: re.Match[str]) -> tuple[Polarity, str, bool]:
    really = "really " if match.group("really") else ""
    return "negative", f"User does not {really}{_verb(match)}", False


def _favorite(match: re.Match[str]) -> tuple[Polarity, str, bool]:
    what = " ".join((match.group("what") or "").split())
    middle = f" {what}" if what else ""
    return "positive", f"User's favorite{middle} {match.group('be').lower()}", False


def _decision(match: re.Match[str]) -> tuple[Polarity, str, bool]:
    verb = _verb(match)
    verb = re.sub(r"^['’]ll", "will", re.sub(r"^(?:['’]m|am) ", "is ", verb))
    return "positive", f"User {verb}", False


def _habit(match: re.Match[str]) -> tuple[Polarity, str, bool]:
    verb = _verb(match)
    if verb == "tend to":
        return "positive", "User tends to", False
    return ("negative" if verb == "never" else "positive"), f"User {verb}", True


_FLAGS = re.IGNORECASE
_PREFER = r"\bI\s+(?P<really>really\s+)?(?P<verb>prefer|like|love|hate|dislike|avoid)\b"
_NOT_PREFER = rf"\bI\s+(?:do\s+not|don{_APOS}?t)\s+(?P<really>really\s+)?(?P<verb>prefer|like|love)\b"
_FAVORITE = r"\bmy\s+favou?rite\s+(?:(?P<what>[^.!?;,]{1,60}?)\s+)?(?P<be>is|are)\b"
_DECIDE = (
    rf"\bI(?P<verb>{_APOS}ll\s+use|\s+will\s+use|\s+chose|\s+decided\s+to(?:\s+use)?"
    rf"|\s+went\s+with|{_APOS}m\s+going\s+to\s+adopt|\s+am\s+going\s+to\s+adopt)\b"
)
_HABIT = r"\bI\s+(?P<verb>usually|always|never|tend\s+to)\b"
_RULES: Final = (
    _Rule(re.compile(_PREFER, _FLAGS), "preference", "factual", _preference),
    _Rule(re.compile(_NOT_PREFER, _FLAGS), "preference", "factual", _negated_preference),
    _Rule(re.compile(_FAVORITE, _FLAGS), "preference", "factual", _favorite),
    _Rule(re.compile(_DECIDE, _FLAGS), "decision", "episodic", _decision),
    _Rule(re.compile(_HABIT, _FLAGS), "pattern", "factual", _habit),
)


def _facts_in_sentence(sentence: str) -> list[Fact]:
    matches = sorted(
        ((m, rule) for rule in _RULES for m in rule.pattern.finditer(sentence)),
        key=lambda pair: pair[0].start(),
    )
    kept: list[tuple[re.Match[str], _Rule]] = []
    for match, rule in matches:  # drop a trigger that starts inside the previous one
        if not kept or match.start() >= kept[-1][0].end():
            kept.append((match, rule))
    facts: list[Fact] = []
    for index, (match, rule) in enumerate(kept):
        # X runs to the next trigger at most; +1 lets " and I" see the trigger's "I".
        stop = kept[index + 1][0].start() if index + 1 < len(kept) else len(sentence)
        boundary = _CLAUSE_BOUNDARY.search(sentence, match.end(), min(stop + 1, len(sentence)))
        if boundary:
            stop = min(stop, boundary.start())
        fact = _build_fact(rule, match, sentence[match.end() : stop])
        if fact is not None:
            facts.append(fact)
    return facts


def _build_fact(rule: _Rule, match: re.Match[str], raw: str) -> Fact | None:
    raw = _DANGLING_CONJUNCTION.sub("", raw.strip().rstrip(_TRAILING_PUNCT))
    obj = normalize_content(raw.rstrip(_TRAILING_PUNCT + " \t"))
    if obj is None or obj.lower() in _VAGUE_OBJECTS or not _HAS_ALNUM.search(obj):
        return None
    polarity, prefix, conjugate = rule.render(match)
    subject = obj
    if rule.category == "preference":
        subject = _COMPARISON.split(obj, maxsplit=1)[0]
    content = f"{prefix} {_third_person(obj) if conjugate else obj}"
    return Fact(
        category=rule.category,
        memory_type=rule.memory_type,
        key=fact_key(rule.category, subject),
        content=content,
        subject=subject,
        polarity=polarity,
    )


def extract_facts(text: str) -> list[Fact]:
    """All facts in `text`, deduplicated by key, in order of each key's first mention.

    Input over 64 KiB of UTF-8 is cut to its tail (the newest turns matter most).
    Questions ("Should I use Redis?") are skipped. When a key repeats, the last statement
    wins but keeps the first one's position: later turns supersede earlier ones ("I like
    Python. Actually, I don't like Python." -> negative), exactly as the storage upsert on
    `(owner, key)` would resolve them one after another, and the order stays stable.
    """
    by_key: dict[str, Fact] = {}
    for sentence in split_sentences(clip_to_tail(text)):
        if sentence.endswith("?"):
            continue
        for fact in _facts_in_sentence(sentence):
            by_key[fact.key] = fact
    return list(by_key.values())


def fact_metadata(fact: Fact, *, extracted_at: str, source: str = "rule") -> dict[str, Any]:
    """Metadata stored with an extracted memory (`extracted_at` is given: no clock here)."""
    return {
        "category": fact.category,
        "extracted_at": extracted_at,
        "source": source,
        "polarity": fact.polarity,
        "subject": fact.subject,
    }
