"""docs/sleep.md: every rule of its table names at least one test, and every test it names exists."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TEST_REF = re.compile(r"(tests/[\w/]+\.py)::(test_\w+)")


def table_rows() -> list[tuple[str, list[tuple[str, str]]]]:
    text = (ROOT / "docs" / "sleep.md").read_text()
    section = text.split("## Rules and the tests that check them", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith("| rule |"):
            continue
        rule, tests = (cell.strip() for cell in line.strip("|").split("|", 1))
        rows.append((rule, TEST_REF.findall(tests)))
    return rows


def functions_of(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_rule_names_tests_that_exist() -> None:
    rows = table_rows()
    assert len(rows) >= 40
    missing = [
        f"{path}::{name}"
        for _rule, refs in rows
        for path, name in refs
        if not (ROOT / path).exists() or name not in functions_of(path)
    ]
    assert missing == []
    assert [rule for rule, refs in rows if not refs] == []
