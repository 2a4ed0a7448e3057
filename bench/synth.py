"""Synthetic but realistic memory text and questions for the latency benchmark (fixed seed).

Chat-like sentences from templates over word lists (people, places, food, projects,
activities, ticket ids, dates), so full-text search sees a realistic vocabulary: a few
very common words (``meeting``, ``went``), many mid-frequency ones and a long tail of
rare tokens. Questions are built from the same lists, so some match thousands of rows
and some a handful, as a real user's do. Same seed, same text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt


def _words(text: str, sep: str = " ") -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(sep) if w.strip())


NAMES = _words(
    "Anna Ben Carla David Elena Farid Greta Hiro Ines Jonas Kemal Lena Marco Nadia Oskar Priya Quentin Rosa "
    "Samir Tara Umar Vera Wei Ximena Yusuf Zoe Alice Bruno Chloe Dmitri Emma Felix Gina Hugo Ida Jack Kira "
    "Liam Maya Noah Olga Pablo Rina Sven Tess Ugo Viktor Wanda Xavier Yara"
)
RELATIONS = _words("sister brother mother father cousin friend colleague neighbour manager roommate aunt uncle")
PLACES = _words(
    "Lisbon|Berlin|Kyoto|Toronto|Nairobi|Oslo|Madrid|Prague|Seoul|Dublin|Austin|Porto|Vienna|Lyon|Krakow|"
    "Marseille|Valencia|Bergen|Tallinn|Zurich|Boston|Denver|Melbourne|Auckland|Cusco|Hanoi|Istanbul|Tbilisi|"
    "the lake|the office|the gym|the library|the farmers market|the beach|the mountains|the old town",
    "|",
)
FOODS = _words(
    "ramen pizza sushi tacos curry falafel pho paella risotto dumplings lasagna bibimbap pancakes croissants "
    "hummus goulash borscht ceviche gnocchi tiramisu"
)
OBJECTS = _words(
    "a new laptop|a bicycle helmet|running shoes|a coffee grinder|a yoga mat|a tent|a guitar|a camera lens|"
    "a standing desk|headphones|a rain jacket|a cookbook|a chess set|a sketchbook|a kayak paddle|a plant|"
    "a mechanical keyboard|a drone|a telescope|a sewing machine",
    "|",
)
ACTIVITIES = _words(
    "hiking cycling swimming climbing painting baking kayaking running skiing surfing dancing fishing "
    "gardening knitting camping sailing birdwatching pottery"
)
TOPICS = _words(
    "the budget review|the quarterly roadmap|the hiring plan|the database migration|the onboarding docs|"
    "the security audit|the holiday schedule|the marketing launch|the customer survey|the API redesign|"
    "the mobile release|the data retention policy|the office move|the sprint retro",
    "|",
)
PROJECTS = _words("atlas borealis cobalt dynamo ember falcon granite helix ion juniper kestrel lumen")
CAUSES = _words(
    "an expired certificate|a full disk|a missing index|a race condition in the scheduler|a bad config flag|"
    "a timeout talking to the payment API|an out-of-memory kill|a schema mismatch",
    "|",
)
ADJECTIVES = _words("amazing exhausting relaxing chaotic beautiful freezing unforgettable boring peaceful hilarious")
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
FEELINGS = _words("excited nervous proud worried grateful tired curious relieved")

TEMPLATES = (
    "I went {activity} with my {relation} near {place} last {weekday}, it was {adj}.",
    "{name} prefers {food} over {food2} and wants to try the place in {place}.",
    "Meeting with {name} about {topic} moved to {weekday} at {hour}.",
    "I bought {object} for the {activity} trip to {place}.",
    "The {project} deploy failed because of {cause}; {name} fixed it in ticket {ticket}.",
    "My {relation} {name} is {feeling} about starting {activity} lessons in {place}.",
    "We talked about {topic} and {name} thinks we should delay it until {month}.",
    "Remember that {name} is allergic to {food} and does not eat {food2}.",
    "I usually go {activity} on {weekday} mornings before work.",
    "{name} recommended a book about {activity} and {activity2}, I felt {feeling} reading it.",
    "Flight to {place} on {date} booked, confirmation {ticket}.",
    "I decided to use {project} for the {topic} work because {name} already knows it.",
)
MONTHS = _words("January February March April May June July August September October November December")
QUESTIONS = (
    "What did I buy for the {activity} trip?",
    "Who is allergic to {food}?",
    "When is the meeting about {topic}?",
    "Why did the {project} deploy fail?",
    "Where did I go {activity} with my {relation}?",
    "What does {name} think about {topic}?",
    "{name} {food}",
    "flight to {place}",
    "Which book did {name} recommend?",
    "How does my {relation} feel about {activity} lessons?",
)


def _fill(template: str, rnd: random.Random, start: datetime) -> str:
    names = rnd.sample(NAMES, 2)
    foods = rnd.sample(FOODS, 2)
    acts = rnd.sample(ACTIVITIES, 2)
    return template.format(
        name=names[0],
        name2=names[1],
        relation=rnd.choice(RELATIONS),
        place=rnd.choice(PLACES),
        food=foods[0],
        food2=foods[1],
        object=rnd.choice(OBJECTS),
        activity=acts[0],
        activity2=acts[1],
        topic=rnd.choice(TOPICS),
        project=rnd.choice(PROJECTS),
        cause=rnd.choice(CAUSES),
        adj=rnd.choice(ADJECTIVES),
        weekday=rnd.choice(WEEKDAYS),
        hour=f"{rnd.randint(8, 18)}:{rnd.choice(('00', '15', '30', '45'))}",
        feeling=rnd.choice(FEELINGS),
        month=rnd.choice(MONTHS),
        ticket=f"{rnd.choice(PROJECTS).upper()}-{rnd.randint(100, 99999)}",
        date=(start + timedelta(days=rnd.randint(0, 300))).strftime("%d %B %Y"),
    )


def sentences(n: int, seed: int = 7) -> Iterator[str]:
    """``n`` chat-like memory texts, one or two sentences each (deterministic for a seed)."""
    rnd = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for _ in range(n):
        text = _fill(rnd.choice(TEMPLATES), rnd, start)
        if rnd.random() < 0.3:
            text += " " + _fill(rnd.choice(TEMPLATES), rnd, start)
        yield text


def questions(n: int, seed: int = 11) -> list[str]:
    rnd = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [_fill(rnd.choice(QUESTIONS), rnd, start) for _ in range(n)]


def mixed_vectors(
    base: npt.NDArray[np.float32], n: int, seed: int = 5, *, second: float = 0.5, noise: float = 0.01
) -> npt.NDArray[np.float32]:
    """``n`` unit vectors, each two rows of ``base`` (real embeddings) mixed, plus noise.

    ``normalize(base[i] + second * base[j] + noise * N(0, 1))``: neighbourhoods like those of
    real embeddings (each vector near its two sources and their other mixtures), but distinct.
    """
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(base), n)
    j = rng.integers(0, len(base), n)
    v = base[i] + second * base[j] + noise * rng.standard_normal((n, base.shape[1]), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)
