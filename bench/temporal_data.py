"""Synthetic dated conversations with questions about when things happened (fixed seed, no LLM).

Two speakers meet in sessions spread over most of a year (often across a new year); in each
session they tell each other what they did, dated the way people date it: "yesterday", "last
Friday", "two weeks ago", "last month", "on 12 March", "on the 3rd of June", "in mid June",
"over the weekend", "a few days back", "last summer", or not at all (it happened that day).
Later sessions mention past events again, undated and often in the question's own words, so
the words of an event match more than its dated turn. Questions: "When did X ...?", "What did
X do in <Month> <Year>?", "... the week before <event>?", "... in the two weeks after
<event>?", "Did X ... before or after <event>?" and "... in the week before <date>?", each
with the turns that answer it (computed from the event dates, never typed). Same seed, same
conversations.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from bench import locomo, synth
from bench.paraphrase_data import CITIES


@dataclass(frozen=True)
class Kind:
    """One kind of event: what the teller says, the question's verb phrase, its noun phrase, a
    later undated mention ({x} is the kind's slot)."""

    did: str
    do: str
    noun: str
    mention: str


KINDS = (
    Kind("went to a pottery workshop in {x}", "go to a pottery workshop in {x}", "the pottery workshop in {x}",
         "The pottery workshop in {x} taught me a lot about patience."),
    Kind("ran a charity race in {x}", "run a charity race in {x}", "the charity race in {x}",
         "My legs still remember that charity race in {x}."),
    Kind("adopted a puppy called {x}", "adopt a puppy called {x}", "adopting the puppy {x}",
         "{x} the puppy chewed my shoes again."),
    Kind("bought {x}", "buy {x}", "buying {x}", "I use {x} every day now, best purchase ever."),
    Kind("went camping near {x}", "go camping near {x}", "the camping trip near {x}",
         "I keep looking at the photos from camping near {x}."),
    Kind("took a cooking class about {x}", "take a cooking class about {x}", "the cooking class about {x}",
         "I tried the {x} recipe from that cooking class at home."),
    Kind("gave a talk about {x} at a meetup", "give a talk about {x} at a meetup", "the meetup talk about {x}",
         "People still message me about my talk on {x}."),
    Kind("visited an art museum in {x}", "visit an art museum in {x}", "the art museum visit in {x}",
         "That art museum in {x} had the most amazing sculptures."),
    Kind("started {x} lessons", "start {x} lessons", "starting {x} lessons", "My {x} lessons are getting harder."),
    Kind("volunteered at a food bank in {x}", "volunteer at a food bank in {x}", "volunteering at the food bank in {x}",
         "The food bank in {x} asked if I can help again."),
    Kind("went to a concert of the {x} band", "go to a concert of the {x} band", "the {x} band concert",
         "I can't stop listening to the {x} band since that concert."),
    Kind("had a picnic with friends in {x}", "have a picnic with friends in {x}", "the picnic in {x}",
         "We should repeat that picnic in {x} some day."),
)  # fmt: skip
SLOTS = {
    0: CITIES, 1: CITIES, 2: ("Biscuit", "Pepper", "Mochi", "Luna", "Rocket", "Waffles", "Ziggy", "Olive", "Nugget"),
    3: synth.OBJECTS, 4: CITIES, 5: synth.FOODS, 6: synth.TOPICS, 7: CITIES, 8: synth.ACTIVITIES, 9: CITIES,
    10: ("Velvet", "Northwind", "Paper Moons", "Copper Fox", "Blue Static", "Echo Park"), 11: CITIES,
}  # fmt: skip
REPLIES = (
    "That sounds {adj}! How did it go?", "Wow, I'm so happy for you, {name}.", "No way, tell me more!",
    "I wish I had been there with you.", "That's {adj}, you always find the best things to do.",
    "Ha, I love that. Did you take pictures?",
)  # fmt: skip
FILLERS = (
    "How are you doing, {name}?", "I've been so busy lately, work never stops.", "Let's catch up again next week!",
    "The weather has been {adj} here.", "I'm feeling {feeling} about the months ahead.",
    "Do you still like {food}? I found a great place for it.", "My {relation} says hi, by the way.",
    "I've been reading a lot about {topic}.", "Thanks for listening, it means a lot.",
    "I'm thinking about getting into {activity}.", "Take care, talk soon!", "Same here, it's been a ride.",
)  # fmt: skip
#: days between sessions at most: 24 sessions stay within a year, the default ``retentionDays``
MAX_GAP = 15
#: later words about a past event that repeat its question's words, by either speaker, undated
ECHOES = (
    "I'd love to {do} again.", "I want to {do} too one day.", "Should I {do} again? It was {adj}.",
    "My sister wants to {do} as well.", "Would you ever {do}? You should.",
)  # fmt: skip
NUMBERS = ("", "one", "two", "three", "four", "five", "six")
#: how a teller dates an event: "none" (it happened that day), exact relative and absolute forms, and the
#: looser ones people use ("over the weekend", "in mid June", "a few days back", "last summer")
FORMS = ("none", "yesterday", "weekday", "days", "weeks", "last_week", "last_month", "absolute", "ordinal",
         "month_ordinal", "part_of_month", "weekend", "week_before_last", "earlier_this_month", "few_days",
         "last_season")  # fmt: skip
SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "winter": 12}
QUESTION_KINDS = ("when", "month", "week_before", "weeks_after", "order", "week_before_date")


@dataclass(frozen=True)
class Event:
    actor: str
    kind: int
    slot: str
    on: date
    dia_id: str

    def did(self) -> str:
        return KINDS[self.kind].did.format(x=self.slot)

    def do(self) -> str:
        return KINDS[self.kind].do.format(x=self.slot)

    def noun(self) -> str:
        return KINDS[self.kind].noun.format(x=self.slot)


@dataclass(frozen=True)
class Generated:
    conversation: locomo.Conversation
    kinds: tuple[str, ...]  # the question kind of each of ``conversation.qas``
    events: tuple[Event, ...]


def date_text(at: datetime) -> str:
    """LoCoMo's session date ("1:56 pm on 8 May, 2023")."""
    return f"{at.hour % 12 or 12}:{at.minute:02d} {'am' if at.hour < 12 else 'pm'} on {at.day} {at:%B}, {at.year}"


def dated(rnd: random.Random, said: date) -> tuple[date, str]:
    """An event day before ``said`` and the words the teller uses for it (empty: that day)."""
    form = rnd.choice(FORMS)
    if form == "yesterday":
        return said - timedelta(days=1), "yesterday"
    if form == "weekday":
        back = rnd.randint(1, 7)
        on = said - timedelta(days=back)
        return on, f"last {on:%A}"
    if form == "days":
        n = rnd.randint(2, 6)
        return said - timedelta(days=n), f"{NUMBERS[n]} days ago"
    if form == "weeks":
        n = rnd.randint(1, 3)
        return said - timedelta(days=7 * n), "a week ago" if n == 1 else f"{NUMBERS[n]} weeks ago"
    if form == "last_week":
        monday = said - timedelta(days=said.weekday() + 7)
        return monday + timedelta(days=rnd.randint(0, 6)), "last week"
    if form == "last_month":
        last = said.replace(day=1) - timedelta(days=1)
        return last.replace(day=rnd.randint(1, last.day)), "last month"
    if form in ("absolute", "ordinal", "month_ordinal"):
        on = said - timedelta(days=rnd.randint(3, 40))
        year = f" {on.year}" if on.year != said.year else ""
        if form == "ordinal":
            return on, f"on the {ordinal(on.day)} of {on:%B}{year}"
        if form == "month_ordinal":
            return on, f"on {on:%B} {ordinal(on.day)}{year and ','}{year}"
        return on, f"on {on.day} {on:%B}{year}"
    if form == "part_of_month":
        on = said - timedelta(days=rnd.randint(10, 60))
        year = f" {on.year}" if on.year != said.year else ""
        return on, f"in {('early', 'mid', 'late')[min(on.day - 1, 20) // 10]} {on:%B}{year}"
    if form == "weekend":  # the Saturday or Sunday of the latest weekend begun by the day said
        saturday = said - timedelta(days=(said.weekday() - 5) % 7)
        return min(said, saturday + timedelta(days=rnd.randint(0, 1))), "over the weekend"
    if form == "week_before_last":
        monday = said - timedelta(days=said.weekday() + 14)
        return monday + timedelta(days=rnd.randint(0, 6)), "the week before last"
    if form == "earlier_this_month" and said.day > 2:
        return said.replace(day=rnd.randint(1, said.day - 1)), "earlier this month"
    if form == "few_days":
        return said - timedelta(days=rnd.randint(2, 4)), "a few days back"
    if form == "last_season":
        season = rnd.choice(("spring", "summer", "autumn", "winter"))
        starts = [date(y, SEASON_START[season], 1) for y in (said.year, said.year - 1, said.year - 2)]
        start = next(d for d in starts if _months_later(d, 3) <= said)  # the latest one over by the day said
        return start + timedelta(days=rnd.randint(0, 89)), f"last {season}"
    return said, ""


def _months_later(d: date, months: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 + months, 12)
    return date(y, m + 1, 1)


def ordinal(n: int) -> str:
    """3 -> "3rd", 11 -> "11th", 22 -> "22nd"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def generate_one(seed: int, sessions: int = 24, per_session: int = 3) -> Generated:
    """One conversation of ``sessions`` sessions with ``per_session`` events each, and its questions."""
    rnd = random.Random(seed)
    speakers = tuple(rnd.sample(synth.NAMES, 2))
    day = date(rnd.choice((2021, 2022, 2023)), rnd.randint(1, 12), rnd.randint(1, 28))
    turns: list[locomo.Turn] = []
    events: list[Event] = []
    used: set[tuple[int, str]] = set()
    for s in range(1, sessions + 1):
        day += timedelta(days=rnd.randint(5, MAX_GAP))
        at = datetime.combine(day, time(rnd.randint(8, 21), rnd.choice((0, 7, 15, 22, 30, 41, 56))), UTC)
        lines: list[list[tuple[str, str, Event | None]]] = []  # blocks of (speaker, text, event told)
        for _ in range(per_session):
            actor = rnd.choice(speakers)
            kind = rnd.randrange(len(KINDS))
            slot = rnd.choice(SLOTS[kind])
            if (kind, slot) in used:
                continue
            used.add((kind, slot))
            on, words = dated(rnd, day)
            clause = KINDS[kind].did.format(x=slot)
            text = (
                f"I just {clause}!"
                if not words
                else rnd.choice((f"I {clause} {words}.", f"{words[0].upper()}{words[1:]} I {clause}."))
            )
            other = speakers[1 - speakers.index(actor)]
            reply = rnd.choice(REPLIES).format(adj=rnd.choice(synth.ADJECTIVES), name=actor)
            told = Event(actor, kind, slot, on, "")
            lines.append([(actor, text, told), (other, reply, None)])
        for past in rnd.sample(events, min(len(events), 3)):
            lines.append([(past.actor, KINDS[past.kind].mention.format(x=past.slot), None)])
        for past in rnd.sample(events, min(len(events), 3)):
            echo = rnd.choice(ECHOES).format(do=past.do(), adj=rnd.choice(synth.ADJECTIVES))
            lines.append([(rnd.choice(speakers), echo, None)])
        for _ in range(rnd.randint(8, 14)):  # sessions of ~20-30 turns, as LoCoMo's
            slots = {
                "name": rnd.choice(speakers),
                "adj": rnd.choice(synth.ADJECTIVES),
                "feeling": rnd.choice(synth.FEELINGS),
                "food": rnd.choice(synth.FOODS),
                "relation": rnd.choice(synth.RELATIONS),
                "topic": rnd.choice(synth.TOPICS),
                "activity": rnd.choice(synth.ACTIVITIES),
            }
            lines.append([(rnd.choice(speakers), rnd.choice(FILLERS).format(**slots), None)])
        rnd.shuffle(lines)
        said: list[tuple[str, str, Event | None]] = []
        for speaker, text, event in (line for block in lines for line in block):
            if all((speaker, text) != (s_, t_) for s_, t_, _e in said):  # a session stores a turn once
                said.append((speaker, text, event))
        for index, (speaker, text, event) in enumerate(said):
            dia = f"D{s}:{index + 1}"
            if event is not None:
                events.append(Event(event.actor, event.kind, event.slot, event.on, dia))
            when = at + timedelta(seconds=index)
            turns.append(locomo.Turn(dia, s, index, speaker, text, date_text(at), when))
    qas, kinds = questions(rnd, events)
    conv = locomo.Conversation(f"temporal-{seed}", speakers, tuple(turns), tuple(qas))  # type: ignore[arg-type]
    return Generated(conv, tuple(kinds), tuple(events))


def questions(rnd: random.Random, events: list[Event], each: int = 10) -> tuple[list[locomo.QA], list[str]]:
    """Up to ``each`` questions of every kind, with the turns that answer them (category 2)."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for e in rnd.sample(events, min(each, len(events))):
        out.append(("when", f"When did {e.actor} {e.do()}?", (e.dia_id,)))
    months: dict[tuple[str, int, int], list[Event]] = {}
    for e in events:
        months.setdefault((e.actor, e.on.year, e.on.month), []).append(e)
    picked = [k for k in sorted(months) if len(months[k]) <= 3]
    for actor, year, month in rnd.sample(picked, min(each, len(picked))):
        name = date(year, month, 1).strftime("%B")
        out.append(
            ("month", f"What did {actor} do in {name} {year}?", tuple(e.dia_id for e in months[actor, year, month]))
        )
    anchored = []
    for a in events:
        before = [e for e in events if e.actor == a.actor and a.on - timedelta(days=7) <= e.on < a.on]
        if 1 <= len(before) <= 3:
            anchored.append((a, before))
    for a, before in rnd.sample(anchored, min(each, len(anchored))):
        evidence = (*(e.dia_id for e in before), a.dia_id)
        out.append(("week_before", f"What did {a.actor} do the week before {a.noun()}?", evidence))
    after = []
    for a in events:
        later = [e for e in events if e.actor == a.actor and a.on < e.on <= a.on + timedelta(days=14)]
        if 1 <= len(later) <= 3:
            after.append((a, later))
    for a, later in rnd.sample(after, min(each, len(after))):
        evidence = (a.dia_id, *(e.dia_id for e in later))
        out.append(("weeks_after", f"What did {a.actor} do in the two weeks after {a.noun()}?", evidence))
    pairs = [
        (a, b)
        for a in events
        for b in events
        if a.actor == b.actor and a.on < b.on and a.dia_id.split(":")[0] != b.dia_id.split(":")[0]
    ]
    for a, b in rnd.sample(pairs, min(each, len(pairs))):
        first, second = (a, b) if rnd.random() < 0.5 else (b, a)
        out.append(
            ("order", f"Did {a.actor} {first.do()} before or after {second.noun()}?", (first.dia_id, second.dia_id))
        )
    dated = []
    for e in events:  # a day shortly after one of the actor's events, named by its date
        day = e.on + timedelta(days=rnd.randint(1, 7))
        before = [b for b in events if b.actor == e.actor and day - timedelta(days=7) <= b.on < day]
        if len(before) <= 3:
            dated.append((e.actor, day, before))
    for actor, day, before in rnd.sample(dated, min(each, len(dated))):
        question = f"What did {actor} do in the week before {day.day} {day:%B} {day.year}?"
        out.append(("week_before_date", question, tuple(b.dia_id for b in before)))
    return [locomo.QA(question=q, category=2, evidence=ev) for _k, q, ev in out], [k for k, _q, _ev in out]


def generate(conversations: int = 4, seed: int = 23) -> list[Generated]:
    """``conversations`` conversations, the i-th from seed ``seed + i``."""
    return [generate_one(seed + i) for i in range(conversations)]
