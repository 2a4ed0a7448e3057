"""Resolutions of the conflict review queue: which request is valid for which pair, and its plan."""

import pytest

from memoryd.errors import Conflict, Forbidden, ValidationFailed
from services.sleep.logic.conflict_review import ReviewPlan, Side, plan_resolution

A = "00000000-0000-4000-8000-00000000000a"
B = "00000000-0000-4000-8000-00000000000b"
PAIR = (A, B)


def sides(a_state: str = "active", b_scope: str = "apiKey") -> dict[str, Side]:
    return {A: Side(A, a_state, "apiKey", "likes tea"), B: Side(B, "active", b_scope, "likes green tea")}


def test_accept_keeps_one_side_and_archives_the_other() -> None:
    assert plan_resolution("accept", B, None, PAIR, sides()) == ReviewPlan(action="accept", keep=B, archive=A)
    # the id may come in upper case or without dashes: the plan names the stored one
    assert plan_resolution("accept", A.replace("-", "").upper(), None, PAIR, sides()).keep == A


def test_merge_keeps_one_side_with_the_given_text() -> None:
    plan = plan_resolution("merge", A, "likes tea, green most", PAIR, sides())
    assert plan == ReviewPlan(action="merge", keep=A, archive=B, content="likes tea, green most")


def test_dismiss_changes_no_memory_even_when_a_side_is_archived() -> None:
    assert plan_resolution("dismiss", None, None, PAIR, sides(a_state="archived")) == ReviewPlan(action="dismiss")


@pytest.mark.parametrize(
    ("action", "keep", "content", "field"),
    [
        ("accept", None, None, "$.keep"),
        ("merge", None, "x", "$.keep"),
        ("accept", "00000000-0000-4000-8000-00000000000c", None, "$.keep"),
        ("accept", A, "new text", "$.content"),
        ("merge", A, None, "$.content"),
        ("dismiss", A, None, "$.action"),
    ],
)
def test_a_malformed_resolution_names_its_field(action: str, keep: str | None, content: str | None, field: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        plan_resolution(action, keep, content, PAIR, sides())
    assert caught.value.field == field


def test_a_side_no_longer_active_leaves_only_dismiss() -> None:
    with pytest.raises(Conflict, match=f"memory {A} is archived"):
        plan_resolution("accept", B, None, PAIR, sides(a_state="archived"))
    with pytest.raises(Conflict, match=f"memory {A} is deleted"):
        plan_resolution("accept", B, None, PAIR, {B: sides()[B]})


def test_a_global_memory_is_never_archived_or_rewritten() -> None:
    glob = sides(b_scope="global")
    assert plan_resolution("accept", B, None, PAIR, glob) == ReviewPlan(action="accept", keep=B, archive=A)
    with pytest.raises(Forbidden, match=f"memory {B} is global"):
        plan_resolution("accept", A, None, PAIR, glob)
    with pytest.raises(Forbidden, match=f"memory {B} is global"):
        plan_resolution("merge", B, "new text", PAIR, glob)
