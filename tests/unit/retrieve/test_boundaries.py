"""The retrieve service's pure modules import only the standard library and msgspec."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import services.retrieve

PURE = ["logic.py", "injection.py"]
ALLOWED = set(sys.stdlib_module_names) | {"msgspec", "__future__"}


def top_level_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else (node.module or "").split(".")[0])
    return names


@pytest.mark.parametrize("name", PURE)
def test_pure_module_imports(name: str) -> None:
    path = Path(services.retrieve.__file__).parent / name
    imports = top_level_imports(path)
    assert imports, "parsed nothing"
    assert imports <= ALLOWED, f"{name} imports {sorted(imports - ALLOWED)}"
