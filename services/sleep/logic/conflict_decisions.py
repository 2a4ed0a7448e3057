"""Conflict resolution, part 2: LLM decisions per pair -> typed change plans, and the ledger.

Reply schema (`conflict_prompt`): `{"decisions": [{"pair": <index>, "action": ..., ...}]}`, a pair
also nameable by `"ids"`, a side by `"a"`/`"b"` or its id. Actions: keep; merge (`keep`,
`content`: the other is archived with `merged_into`); update (`target`, `content`); archive
(`target`); supersede (the later `updated_at` wins, equal ones keep); conflict (a
`conflict_pending` row); create (a new `sleep` memory, both stay); differentiate (only the
`differentiated_pairs` row, never content). Replaced text goes to `content_history`; the I/O
layer applies a batch's plans in one transaction. An invalid decision (counted in `invalid`) or
none (`undecided`) means keep; a reply that is not JSON or has no decision list raises
`LlmBadReply` (the batch is broken).
"""

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final

import msgspec

from services.sleep.logic.conflict_pairs import ConflictPair, PairKey, normalise_pair
from shared.llm.reply import reply_items
from shared.quoting import quote

DEFAULT_ACTIONS: Final = frozenset({"keep", "merge", "conflict", "create", "archive", "update"})
FULL_ACTIONS: Final = DEFAULT_ACTIONS | {"supersede", "differentiate"}
KEEP: Final = "keep"


def allowed_actions(action_set: str) -> frozenset[str]:
    """The actions of `sleepActionSet`: `default` or `full` (+ supersede, differentiate)."""
    if action_set == "default":
        return DEFAULT_ACTIONS
    if action_set == "full":
        return FULL_ACTIONS
    raise ValueError(f"unknown sleepActionSet {action_set!r}; expected default or full")


class _Plan(msgspec.Struct, frozen=True, kw_only=True, tag_field="action"):
    """Base of the change plans; the tag is the action name."""


class KeepPlan(_Plan, frozen=True, kw_only=True, tag="keep"):
    a_id: str
    b_id: str


class MergePlan(_Plan, frozen=True, kw_only=True, tag="merge"):
    keep_id: str
    archive_id: str
    content: str


class UpdatePlan(_Plan, frozen=True, kw_only=True, tag="update"):
    memory_id: str
    content: str


class ArchivePlan(_Plan, frozen=True, kw_only=True, tag="archive"):
    memory_id: str


class SupersedePlan(_Plan, frozen=True, kw_only=True, tag="supersede"):
    newer_id: str
    older_id: str


class ConflictPendingPlan(_Plan, frozen=True, kw_only=True, tag="conflict"):
    a_id: str
    b_id: str
    note: str = ""


class CreatePlan(_Plan, frozen=True, kw_only=True, tag="create"):
    content: str
    source_ids: tuple[str, str]


class DifferentiatePlan(_Plan, frozen=True, kw_only=True, tag="differentiate"):
    a_id: str
    b_id: str
    hash_a: str
    hash_b: str
    distinctions: str


ConflictPlan = (
    KeepPlan
    | MergePlan
    | UpdatePlan
    | ArchivePlan
    | SupersedePlan
    | ConflictPendingPlan
    | CreatePlan
    | DifferentiatePlan
)


def plan_action(plan: ConflictPlan) -> str:
    """The action name of a plan (its tag)."""
    return str(plan.__struct_config__.tag)


class PairDecision(msgspec.Struct, frozen=True, kw_only=True):
    """The decision for one pair of a batch; `defaulted` when keep was not the LLM's choice."""

    pair: ConflictPair
    plan: ConflictPlan
    defaulted: bool = False

    @property
    def action(self) -> str:
        return plan_action(self.plan)


class ParsedBatch(msgspec.Struct, frozen=True, kw_only=True):
    """One decision per pair of the batch, in batch order, and what was rejected."""

    decisions: tuple[PairDecision, ...]
    invalid: int = 0
    undecided: int = 0
    problems: tuple[str, ...] = ()


class _RawDecision(msgspec.Struct):
    pair: int | None = None
    ids: list[str] | None = None
    action: str | None = None
    keep: str | None = None
    target: str | None = None
    content: str | None = None
    distinctions: str | None = None
    reason: str | None = None


def _text(value: str | None) -> str | None:
    if value is None:
        return None
    stripped = value.strip()
    return stripped or None


def _side(value: str | None, pair: ConflictPair) -> str | None:
    if value is None:
        return None
    side = value.strip()
    if side.lower() == "a":
        return pair.a_id
    if side.lower() == "b":
        return pair.b_id
    return side if side in pair.key else None


def _other(memory_id: str, pair: ConflictPair) -> str:
    return pair.b_id if memory_id == pair.a_id else pair.a_id


def _pair_index(raw: _RawDecision, batch: Sequence[ConflictPair]) -> int | str:
    by_ids: int | None = None
    if raw.ids is not None:
        if len(raw.ids) != 2 or raw.ids[0] == raw.ids[1]:
            return "`ids` must name two distinct memories"
        key = normalise_pair(raw.ids[0], raw.ids[1])
        matches = [i for i, pair in enumerate(batch) if pair.key == key]
        if not matches:
            return f"unknown pair {list(key)}"
        by_ids = matches[0]
    if raw.pair is not None:
        if not 0 <= raw.pair < len(batch):
            return f"unknown pair {raw.pair}"
        if by_ids is not None and by_ids != raw.pair:
            return f"pair {raw.pair} and ids {raw.ids} disagree"
        return raw.pair
    return by_ids if by_ids is not None else "missing pair"


def _plan(raw: _RawDecision, pair: ConflictPair, allowed: frozenset[str]) -> ConflictPlan | str:
    action = (raw.action or "").strip().lower()
    if not action:
        return "missing action"
    if action not in FULL_ACTIONS:
        return f"unknown action {action!r}"
    if action not in allowed:
        return f"action {action!r} needs sleepActionSet=full"
    content = _text(raw.content)
    a, b = pair.key
    if action == KEEP:
        return KeepPlan(a_id=a, b_id=b)
    if action == "conflict":
        return ConflictPendingPlan(a_id=a, b_id=b, note=_text(raw.reason) or "")
    if action == "create":
        if content is None:
            return "create needs `content`"
        return CreatePlan(content=content, source_ids=(a, b))
    if action == "differentiate":
        distinctions = _text(raw.distinctions)
        if distinctions is None:
            return "differentiate needs `distinctions`"
        return DifferentiatePlan(a_id=a, b_id=b, hash_a=pair.a_hash, hash_b=pair.b_hash, distinctions=distinctions)
    if action == "supersede":
        if pair.a_updated_at == pair.b_updated_at:
            return "supersede needs one memory newer than the other"
        newer = a if pair.a_updated_at > pair.b_updated_at else b
        return SupersedePlan(newer_id=newer, older_id=_other(newer, pair))
    if action == "merge":
        keep = _side(raw.keep, pair)
        if keep is None or content is None:
            return "merge needs `keep` (a|b) and `content`"
        return MergePlan(keep_id=keep, archive_id=_other(keep, pair), content=content)
    target = _side(raw.target, pair)
    if target is None:
        return f"{action} needs `target` (a|b)"
    if action == "archive":
        return ArchivePlan(memory_id=target)
    if content is None:
        return "update needs `content`"
    return UpdatePlan(memory_id=target, content=content)


def parse_decisions(reply: object, batch: Sequence[ConflictPair], action_set: str) -> ParsedBatch:
    """Validate the decoded LLM reply of one batch; ``LlmBadReply`` when it has no decision list."""
    allowed = allowed_actions(action_set)
    items = reply_items(reply, "decisions")
    chosen: dict[int, ConflictPlan] = {}
    seen: set[int] = set()
    problems: list[str] = []
    for number, item in enumerate(items):
        try:
            decoded = msgspec.convert(item, _RawDecision, strict=False)
        except msgspec.ValidationError as exc:
            problems.append(f"decision {number}: {exc}")
            continue
        index = _pair_index(decoded, batch)
        if isinstance(index, str):
            problems.append(f"decision {number}: {index}")
            continue
        if index in seen:
            problems.append(f"decision {number}: second decision for pair {index}")
            continue
        seen.add(index)
        plan = _plan(decoded, batch[index], allowed)
        if isinstance(plan, str):
            problems.append(f"decision {number} (pair {index}): {plan}")
            continue
        chosen[index] = plan
    decisions = tuple(
        PairDecision(
            pair=pair,
            plan=chosen.get(i) or KeepPlan(a_id=pair.a_id, b_id=pair.b_id),
            defaulted=i not in chosen,
        )
        for i, pair in enumerate(batch)
    )
    return ParsedBatch(
        decisions=decisions,
        invalid=len(problems),
        undecided=len(batch) - len(seen),
        problems=tuple(problems),
    )


def judged_at_for_batch(sent_at: datetime, updated_ats: Iterable[datetime]) -> datetime:
    """`judged_at` of a batch: max(time taken before sending, newest updated_at in it)."""
    return max([sent_at, *updated_ats])


def batch_updated_ats(batch: Iterable[ConflictPair]) -> list[datetime]:
    """Every `updated_at` of the memories of a batch."""
    return [at for pair in batch for at in (pair.a_updated_at, pair.b_updated_at)]


def ledger_outcome(decision: PairDecision) -> str:
    """The ledger outcome of a pair: its non-keep action, or `keep` when both stay."""
    return decision.action


class LedgerEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One idempotent `conflict_reviewed` upsert, pair in normalised order."""

    a_id: str
    b_id: str
    judged_at: datetime
    outcome: str


def ledger_entries(
    decisions: Iterable[PairDecision], judged_at: datetime, failed: Collection[PairKey] = ()
) -> tuple[LedgerEntry, ...]:
    """Ledger rows of a batch; pairs whose decision failed to apply are not recorded."""
    return tuple(
        LedgerEntry(a_id=d.pair.a_id, b_id=d.pair.b_id, judged_at=judged_at, outcome=ledger_outcome(d))
        for d in decisions
        if d.pair.key not in failed
    )


def tally_applied(decisions: Iterable[PairDecision], failed: Collection[PairKey] = ()) -> dict[str, int]:
    """Applied decisions per action (every action present); failed pairs are left out."""
    counts = dict.fromkeys(sorted(FULL_ACTIONS), 0)
    for decision in decisions:
        if decision.pair.key not in failed:
            counts[decision.action] += 1
    return counts


_ACTION_HELP: Final = {
    "keep": "both stay as they are",
    "merge": 'same fact: give `keep` ("a" or "b", the one that stays) and merged `content`',
    "update": 'one is partly outdated: give `target` ("a" or "b") and its new `content`',
    "archive": 'one is redundant or wrong: give `target` ("a" or "b")',
    "conflict": "they contradict and you cannot tell which is right: give a short `reason`",
    "create": "together they imply a new memory: give its `content`",
    "supersede": "the newer one replaces the older one",
    "differentiate": "alike but different: give `distinctions` (what tells them apart)",
}


def conflict_prompt(batch: Sequence[ConflictPair], contents: Mapping[str, str], action_set: str) -> str:
    """The user prompt of one batch, matching the reply schema `parse_decisions` accepts."""
    allowed = allowed_actions(action_set)
    lines = [
        "Pairs of memories of one user look alike. Decide one action per pair.",
        "Actions:",
        *(f"- {name}: {text}" for name, text in _ACTION_HELP.items() if name in allowed),
        'Reply with JSON only: {"decisions": [{"pair": <number>, "action": "<action>", ...}]}, one decision per pair.',
        "",
    ]
    for index, pair in enumerate(batch):
        for memory_id in pair.key:
            if memory_id not in contents:
                raise ValueError(f"no content for memory {memory_id}")
        lines.append(f"Pair {index}:")
        lines.append(f"  a (updated {pair.a_updated_at.isoformat()}): {quote(contents[pair.a_id])}")
        lines.append(f"  b (updated {pair.b_updated_at.isoformat()}): {quote(contents[pair.b_id])}")
    return "\n".join(lines)


#: The ledger outcome and queue reason of a pair parked by `conflictFreezeEnabled`.
FROZEN_OUTCOME: Final = "conflict"
FROZEN_REASON: Final = "conflictFreezeEnabled: parked for review without an LLM call"


def parked_entries(batch: Iterable[ConflictPair], judged_at: datetime) -> tuple[LedgerEntry, ...]:
    """Freeze mode: the ledger rows of pairs sent to the review queue unjudged (no LLM call).

    Recorded like a `conflict` decision, so later runs skip them until a side changes, while
    the review queue holds them for a person.
    """
    return tuple(LedgerEntry(a_id=p.a_id, b_id=p.b_id, judged_at=judged_at, outcome=FROZEN_OUTCOME) for p in batch)


class HeldBatch(msgspec.Struct, frozen=True, kw_only=True):
    """A batch's decisions after the run's update cap.

    `capped` pairs (an `update` over `reflectionUpdateMaxPerRun`) become keep, are not
    recorded in the ledger and stay in the backlog: a later run judges them again.
    """

    decisions: tuple[PairDecision, ...]
    capped: frozenset[PairKey] = frozenset()


def hold_decisions(decisions: Iterable[PairDecision], *, updates_left: int) -> HeldBatch:
    """`update` decisions beyond `updates_left` (the run's remaining cap) are held back."""
    out: list[PairDecision] = []
    capped: set[PairKey] = set()
    left = max(0, updates_left)
    for decision in decisions:
        pair, plan = decision.pair, decision.plan
        if isinstance(plan, UpdatePlan) and left == 0:
            out.append(PairDecision(pair=pair, plan=KeepPlan(a_id=pair.a_id, b_id=pair.b_id), defaulted=True))
            capped.add(pair.key)
        else:
            left -= isinstance(plan, UpdatePlan)
            out.append(decision)
    return HeldBatch(decisions=tuple(out), capped=frozenset(capped))
