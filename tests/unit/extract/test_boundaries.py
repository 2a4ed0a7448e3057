"""The extractor stays pure: only stdlib and msgspec imports, nothing that does I/O."""

import ast
import sys
from pathlib import Path

import pytest

EXTRACT = Path(__file__).resolve().parents[3] / "services" / "extract"
ALLOWED_THIRD_PARTY = {"msgspec"}
ALLOWED_LOCAL = {"services.extract.logic"}
IO_MODULES = {"socket", "asyncio", "subprocess", "os", "io", "pathlib", "shutil", "urllib"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", ["logic.py", "entities.py"])
def test_pure_modules_import_only_stdlib_and_msgspec(module: str) -> None:
    for name in imported_modules(EXTRACT / module):
        top = name.split(".")[0]
        allowed = top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY
        assert allowed or name in ALLOWED_LOCAL, f"{module} imports {name}"
        assert top not in IO_MODULES, f"{module} imports I/O module {name}"
