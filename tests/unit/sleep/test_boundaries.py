"""The sleep decision modules stay pure: stdlib, msgspec, each other and pure shared settings."""

import ast
import sys
from pathlib import Path

import pytest

SLEEP = Path(__file__).resolve().parents[3] / "services" / "sleep"
PURE = sorted([*SLEEP.glob("*_logic.py"), SLEEP / "logic.py", SLEEP / "receipt.py"])
#: Pure shared modules the decision logic may use (one definition of the settings).
PURE_SHARED = {"shared.sleep_settings"}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            roots.add(node.module)
    return roots


@pytest.mark.parametrize("path", PURE, ids=lambda p: p.name)
def test_pure_module_imports_only_stdlib_msgspec_and_sleep_logic(path: Path) -> None:
    for module in imported_roots(path):
        root = module.split(".")[0]
        if root in sys.stdlib_module_names or root == "msgspec" or module in PURE_SHARED:
            continue
        assert module.startswith("services.sleep."), f"{path.name} imports {module}"
        target = SLEEP / (module.removeprefix("services.sleep.") + ".py")
        assert target in PURE, f"{path.name} imports non-pure {module}"


def test_every_pure_module_has_a_docstring() -> None:
    for path in PURE:
        assert ast.get_docstring(ast.parse(path.read_text())), path.name
