"""Synthetic memories with a keyword-style and a paraphrased question each (fixed seed, no LLM).

Every memory is one chat-like sentence from a template over ``synth``'s word lists. Each
template comes with two questions about it: a keyword-style one that repeats the memory's
words (``"Who is allergic to ramen?"``) and a paraphrase built from a synonym table and a
reworded template (``"Which person gets a bad reaction from Japanese noodle soup?"``) that
shares at most one content word (an entity: a name, a place, a project) with the memory it
was written from. ``shared_words`` checks that for every pair generated; a pair that breaks
it is never emitted. Same seed, same corpus and questions.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bench import synth

#: Words that carry no content (ignored when counting words in common), lower case.
STOPWORDS = frozenset(
    synth._words(
        "a an the and or of to in on at for with by from about over until into it its is are was were be been "
        "i me my we our you your he she they them their his her who whom what which when where why how do does "
        "did done go goes went have has had this that these those there then than so because not no as up out "
        "last before after usually already one"
    )
)

ACTIVITY = {
    "hiking": "trekking on trails",
    "cycling": "bike riding",
    "swimming": "doing laps in a pool",
    "climbing": "bouldering on rock walls",
    "painting": "watercolour art",
    "baking": "making bread and cakes",
    "kayaking": "paddling a canoe",
    "running": "jogging",
    "skiing": "going downhill on snow",
    "surfing": "riding ocean waves",
    "dancing": "salsa and tango",
    "fishing": "angling for trout",
    "gardening": "growing vegetables and flowers",
    "knitting": "crafting with wool and needles",
    "camping": "sleeping outdoors under canvas",
    "sailing": "boating with a mast",
    "birdwatching": "spotting wild birds",
    "pottery": "shaping clay on a wheel",
}
FOOD = {
    "ramen": "Japanese noodle soup",
    "pizza": "Italian flatbread with mozzarella",
    "sushi": "raw fish on vinegared rice",
    "tacos": "Mexican filled tortillas",
    "curry": "spicy Indian stew",
    "falafel": "fried chickpea balls",
    "pho": "Vietnamese beef noodle broth",
    "paella": "Spanish saffron rice",
    "risotto": "creamy arborio dish",
    "dumplings": "stuffed steamed parcels",
    "lasagna": "layered pasta bake",
    "bibimbap": "Korean mixed rice bowl",
    "pancakes": "flapjacks with syrup",
    "croissants": "French butter pastries",
    "hummus": "chickpea dip",
    "goulash": "Hungarian paprika stew",
    "borscht": "beetroot soup",
    "ceviche": "citrus-cured seafood",
    "gnocchi": "potato pasta",
    "tiramisu": "coffee-soaked Italian dessert",
}
RELATION = {
    "sister": "female sibling",
    "brother": "male sibling",
    "mother": "mum",
    "father": "dad",
    "cousin": "aunt's child",
    "friend": "pal",
    "colleague": "coworker",
    "neighbour": "next-door resident",
    "manager": "boss",
    "roommate": "flatmate",
    "aunt": "parent's sister",
    "uncle": "parent's brother",
}
TOPIC = {
    "the budget review": "spending assessment",
    "the quarterly roadmap": "three-month product plan",
    "the hiring plan": "recruitment strategy",
    "the database migration": "move of our data store",
    "the onboarding docs": "guides for new starters",
    "the security audit": "vulnerability inspection",
    "the holiday schedule": "vacation calendar",
    "the marketing launch": "promotional campaign kickoff",
    "the customer survey": "client questionnaire",
    "the API redesign": "interface overhaul",
    "the mobile release": "phone app shipping",
    "the data retention policy": "rules on keeping records",
    "the office move": "workplace relocation",
    "the sprint retro": "iteration retrospective",
}
CITIES = tuple(p for p in synth.PLACES if not p.startswith("the "))


@dataclass(frozen=True)
class Template:
    """A memory sentence and its two questions (``str.format`` over the same slots)."""

    memory: str
    keyword: str
    paraphrase: str


TEMPLATES = (
    Template(
        "I went {activity} with my {relation} near {place} last {weekday}, it was {adj}.",
        "Where did I go {activity} with my {relation}?",
        "Which spot did I visit for {activity_p} alongside my {relation_p}?",
    ),
    Template(
        "Remember that {name} is allergic to {food} and does not eat {food2}.",
        "Who is allergic to {food} and does not eat {food2}?",
        "Which person gets a bad reaction from {food_p} and avoids {food2_p}?",
    ),
    Template(
        "The {project} deploy failed because of {cause}; {name} fixed it in ticket {ticket}.",
        "Why did the {project} deploy fail, who fixed it?",
        "What broke the {project} release and which engineer repaired it?",
    ),
    Template(
        "Meeting with {name} about {topic} moved to {weekday} at {hour}.",
        "When is the meeting with {name} about {topic}?",
        "What time was the {topic_p} discussion rescheduled to?",
    ),
    Template(
        "I bought {object} for the {activity} trip to {place}.",
        "What did I buy for the {activity} trip to {place}?",
        "What purchase did I make ahead of travelling for {activity_p}?",
    ),
    Template(
        "My {relation} {name} is {feeling} about starting {activity} lessons in {place}.",
        "How does my {relation} {name} feel about {activity} lessons?",
        "What emotion does {name} have regarding classes in {activity_p}?",
    ),
    Template(
        "We talked about {topic} and {name} thinks we should delay it until {month}.",
        "What does {name} think about {topic}?",
        "Till which month would {name} postpone the {topic_p}?",
    ),
    Template(
        "{name} recommended a book about {activity} and {activity2}, I felt {feeling} reading it.",
        "Which book about {activity} did {name} recommend?",
        "What title on {activity_p} did {name} suggest?",
    ),
    Template(
        "Flight to {city} on {date} booked, confirmation {ticket}.",
        "flight to {city} booked confirmation",
        "When do I fly out to {city}?",
    ),
    Template(
        "{name} prefers {food} over {food2} and wants to try the place in {place}.",
        "{name} prefers {food} over {food2}",
        "Which dish does {name} like better than {food2_p}?",
    ),
    Template(
        "I usually go {activity} with {name} on {weekday} mornings before work.",
        "When do I usually go {activity} with {name} before work?",
        "On which day of the week is my early {activity_p} routine with {name}?",
    ),
    Template(
        "I decided to use {project} for {topic} work because {name} already knows it.",
        "Why did I use {project} for {topic} work?",
        "What made me pick a tool for the {topic_p}, given someone's prior experience?",
    ),
)


@dataclass(frozen=True)
class Item:
    """One memory and the two questions written from it."""

    memory: str
    keyword: str
    paraphrase: str


def content_words(text: str) -> set[str]:
    """Lower-case words of ``text`` (letters and digits), stop words dropped."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS}


def shared_words(a: str, b: str) -> set[str]:
    return content_words(a) & content_words(b)


def _slots(rnd: random.Random) -> dict[str, str]:
    acts = rnd.sample(sorted(ACTIVITY), 2)
    foods = rnd.sample(sorted(FOOD), 2)
    relation = rnd.choice(sorted(RELATION))
    topic = rnd.choice(sorted(TOPIC))
    slots = {
        "name": rnd.choice(synth.NAMES),
        "relation": relation,
        "relation_p": RELATION[relation],
        "place": rnd.choice(synth.PLACES),
        "city": rnd.choice(CITIES),
        "food": foods[0],
        "food2": foods[1],
        "food_p": FOOD[foods[0]],
        "food2_p": FOOD[foods[1]],
        "object": rnd.choice(synth.OBJECTS),
        "activity": acts[0],
        "activity2": acts[1],
        "activity_p": ACTIVITY[acts[0]],
        "topic": topic,
        "topic_p": TOPIC[topic],
        "project": rnd.choice(synth.PROJECTS),
        "cause": rnd.choice(synth.CAUSES),
        "adj": rnd.choice(synth.ADJECTIVES),
        "weekday": rnd.choice(synth.WEEKDAYS),
        "hour": f"{rnd.randint(8, 18)}:{rnd.choice(('00', '15', '30', '45'))}",
        "feeling": rnd.choice(synth.FEELINGS),
        "month": rnd.choice(synth.MONTHS),
        "ticket": f"{rnd.choice(synth.PROJECTS).upper()}-{rnd.randint(100, 99999)}",
        "date": f"{rnd.randint(1, 28)} {rnd.choice(synth.MONTHS)} 2026",
    }
    return slots


def generate(n: int, seed: int = 19, *, max_shared: int = 1) -> list[Item]:
    """``n`` memories, each with its keyword and paraphrased question (deterministic for a seed).

    A draw whose paraphrase shares more than ``max_shared`` content words with its memory
    (a synonym that happens to repeat a word of the other slots) is skipped, so every item
    returned satisfies the paraphrase rule.
    """
    rnd = random.Random(seed)
    out: list[Item] = []
    seen: set[str] = set()
    for _ in range(50 * n + 100):
        if len(out) == n:
            break
        template = TEMPLATES[len(out) % len(TEMPLATES)]
        slots = _slots(rnd)
        item = Item(*(text.format(**slots) for text in (template.memory, template.keyword, template.paraphrase)))
        if item.memory in seen or len(shared_words(item.memory, item.paraphrase)) > max_shared:
            continue
        seen.add(item.memory)
        out.append(item)
    if len(out) < n:
        raise ValueError(f"only {len(out)} distinct items fit the templates, not {n}")
    return out


def check(items: list[Item], rule: Callable[[Item], bool] | None = None) -> Mapping[str, int]:
    """How many items satisfy the paraphrase rule (``rule``; default: at most one word in common)."""
    ok = rule or (lambda it: len(shared_words(it.memory, it.paraphrase)) <= 1)
    good = sum(1 for it in items if ok(it))
    return {"items": len(items), "paraphrase_rule_ok": good}
