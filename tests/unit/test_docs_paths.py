"""Every repository path that the docs and the docstrings name exists: a file that moves or goes
takes its mentions with it. Paths are read from backticks (``services/retrieve/engine.py``);
a bare file name (``engine_switch.py``) must name some file of the repository."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("memoryd/", "shared/", "services/", "bench/", "tests/", "docs/", "deploy/", "clients/", "scripts/", ".ci/")
EXTENSIONS = (".py", ".md", ".json", ".yml", ".yaml", ".sql", ".html", ".toml", ".sh", ".conf", ".js", ".ts", ".css")
#: Files memoryd writes at run time (in its data directory), not files of the repository.
RUNTIME_FILES = frozenset(
    {"client.json", "credentials.json", "runtime.json", "prometheus-targets.json", "pg_hba.conf", "auth.conf"}
)
_TOKEN = re.compile(r"`{1,2}([A-Za-z0-9_./-]+)`{1,2}")
SKIPPED = (".git", ".venv", "node_modules", "build", "dist")


def named_paths(text: str) -> Iterator[str]:
    for match in _TOKEN.finditer(text):
        token = match.group(1).rstrip(".,:")
        if token.startswith(TOPS) or (token.endswith(EXTENSIONS) and "/" not in token and not token.startswith(".")):
            yield token


def texts() -> Iterator[tuple[str, str]]:
    for path in [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")]:
        yield str(path.relative_to(ROOT)), path.read_text()
    for top in ("memoryd", "shared", "services", "bench", "tests"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    doc = ast.get_docstring(node)
                    if doc:
                        yield str(path.relative_to(ROOT)), doc


def test_every_path_the_docs_and_docstrings_name_exists() -> None:
    names = {p.name for p in ROOT.rglob("*") if not any(part in SKIPPED for part in p.relative_to(ROOT).parts)}
    missing = []
    for where, text in texts():
        for token in named_paths(text):
            if "/" in token:
                if not any(ch in token for ch in "*<>{}") and not (ROOT / token).exists():
                    missing.append(f"{where}: {token}")
            elif token not in names and token not in RUNTIME_FILES:
                missing.append(f"{where}: {token}")
    assert missing == []


def test_the_check_sees_a_missing_file() -> None:
    assert list(named_paths("see `services/embed/gone.py` and ``gone.py``")) == ["services/embed/gone.py", "gone.py"]
