"""Direction hints of co-occurrences and the pool prompts of the LLM phases (pure helpers)."""

from services.sleep.logic.patterns import parse_pattern_reply
from services.sleep.logic.prompts import PoolMemory, PromptEntity, affective_prompt, one_line, pattern_prompt
from services.sleep.logic.relations import CoOccurrence, hinted_co_occurrence


def test_no_hint_is_related_to_in_the_given_order() -> None:
    assert hinted_co_occurrence("a", "b", 4) == CoOccurrence(a_id="a", b_id="b", count=4)


def test_the_strongest_hint_sets_relation_and_direction() -> None:
    assert hinted_co_occurrence("a", "b", 5, b_part_of_a=1, a_depends_on_b=3) == CoOccurrence(
        a_id="a", b_id="b", count=5, relation="depends_on"
    )
    assert hinted_co_occurrence("a", "b", 2, b_depends_on_a=2) == CoOccurrence(
        a_id="b", b_id="a", count=2, relation="depends_on"
    )


def test_ties_prefer_part_of_then_a_to_b() -> None:
    tie = hinted_co_occurrence("a", "b", 3, a_part_of_b=1, b_part_of_a=1, a_depends_on_b=1, b_depends_on_a=1)
    assert (tie.a_id, tie.b_id, tie.relation) == ("a", "b", "part_of")


def test_one_line_flattens_and_clips() -> None:
    assert one_line("a\n- [fake] b", 100) == "a - [fake] b"
    assert one_line("x" * 10, 5) == "xxxx…"


def test_pattern_prompt_lists_ids_known_titles_and_the_cap() -> None:
    pool = [PoolMemory(id="m1", content="runs\nat 6"), PoolMemory(id="m2", content="runs again")]
    prompt = pattern_prompt(pool, ["Morning runs"], 3)
    assert "at most 3 recurring patterns" in prompt
    assert "Known patterns: Morning runs" in prompt
    assert prompt.splitlines()[-2:] == ['- [m1] "runs at 6"', '- [m2] "runs again"']
    assert parse_pattern_reply({"patterns": []}).proposals == ()  # the schema the prompt asks for


def test_affective_prompt_shows_entities_and_sessions() -> None:
    prompt = affective_prompt(
        [PoolMemory(id="m1", content="Alice is tense", session_id="s1"), PoolMemory(id="m2", content="x")],
        [PromptEntity(id="e1", name="Alice", kind="person"), PromptEntity(id="e2", name="Deploys")],
    )
    assert "- Alice (person)" in prompt and "- Deploys (thing)" in prompt
    assert '- [m1] (session s1) "Alice is tense"' in prompt and '- [m2] (session -) "x"' in prompt
