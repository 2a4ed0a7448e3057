"""Module docstrings stay short: what lives in a module and why, not its history.

A docstring over ``MAX_LINES`` lines (blank lines included) fails; measurements belong in the
generated benchmark tables and design alternatives in ``docs/decisions.md``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("memoryd", "shared", "services", "bench", "tests")
MAX_LINES = 15


def docstring_lines(path: Path) -> int:
    """Lines of the module docstring of ``path`` (0 without one), as a reader sees them."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
    return len(doc.strip().splitlines()) if doc else 0


def test_docstring_lines_counts_what_a_reader_sees(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Summary.\n\nBody one.\nBody two.\n"""\n\nX = 1\n', encoding="utf-8")
    assert docstring_lines(module) == 4
    module.write_text("X = 1\n", encoding="utf-8")
    assert docstring_lines(module) == 0


def test_no_module_docstring_is_longer_than_the_limit() -> None:
    files = [p for top in TOPS for p in sorted((ROOT / top).rglob("*.py"))]
    assert len(files) > 100, "the walk found too few modules: wrong root?"
    too_long = {str(p.relative_to(ROOT)): n for p in files if (n := docstring_lines(p)) > MAX_LINES}
    assert too_long == {}


def test_the_decisions_page_is_linked_from_the_design() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert "(decisions.md)" in design
    assert (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8").startswith("# Design decisions")
