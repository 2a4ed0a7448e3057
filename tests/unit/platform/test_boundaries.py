"""The import boundaries of the codebase, checked on the AST.

- no ``services.X`` imports ``services.Y`` (services talk only over NATS);
- ``shared`` never imports ``services``;
- pure-logic modules (``logic.py`` and ``*_logic.py``) import no I/O library.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
IO_LIBRARIES = {
    "nats",
    "asyncpg",
    "qdrant_client",
    "onnxruntime",
    "httpx",
    "pgvector",
    "socket",
    "subprocess",
    "tokenizers",
    "prometheus_client",
    "aiohttp",
    "requests",
    "urllib",
    "shared.bus",
    "shared.db",
}


def _imports(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                yield ".".join([*base, node.module] if node.module else base)
            else:
                yield node.module or ""


def _py(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_services_do_not_import_each_other() -> None:
    bad = []
    for path in _py("services"):
        own = path.relative_to(ROOT / "services").parts[0]
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "services" and len(parts) > 1 and parts[1] != own:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_shared_never_imports_services() -> None:
    bad = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in _py("shared")
        for n in _imports(p)
        if n == "services" or n.startswith("services.")
    ]
    assert bad == []


def test_logic_modules_are_pure() -> None:
    logic = [p for p in _py("services") + _py("shared") if p.name == "logic.py" or p.name.endswith("_logic.py")]
    assert logic, "expected pure-logic modules"
    bad = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in logic
        for n in _imports(p)
        if any(n == lib or n.startswith(lib + ".") for lib in IO_LIBRARIES)
    ]
    assert bad == []
