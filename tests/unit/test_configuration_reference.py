"""``docs/configuration.md`` is generated, current, and names everything the code reads.

- the committed file is what ``python -m services.configuration`` writes now;
- every ``MEMORYD_*`` name written in the installed code (read from an environment or passed
  to a child process) is a documented variable, and every prefix handed to
  ``shared.settings.env.load`` belongs to a documented Struct;
- every runtime key a settings row may hold is documented, and nothing else is;
- nothing outside ``shared.service.main`` reads ``os.environ`` in the services or ``shared``
  (the client and the command line in ``memoryd`` are entry points of their own).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import msgspec
import pytest

from services import configuration
from shared.settings.env import DATA_ENV_PREFIX, SERVICE_ENV_PREFIXES
from shared.settings.memory import all_setting_names
from shared.settings.reference import rows

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
INSTALLED = ("memoryd", "shared", "services")
VARIABLE = re.compile(r"\bMEMORYD_[A-Z0-9_]*[A-Z0-9]\b")
DOC_ROW = re.compile(r"^\| `([A-Za-z0-9_]+)` \|", re.MULTILINE)


class Bare(msgspec.Struct):
    undocumented: int = 0


def _sources() -> list[Path]:
    return [p for top in INSTALLED for p in sorted((ROOT / top).rglob("*.py"))]


def _documented() -> set[str]:
    return set(DOC_ROW.findall(DOC.read_text()))


def test_the_committed_reference_is_current() -> None:
    assert DOC.read_text() == configuration.render(), "stale: run `make config-docs`"


def test_every_variable_named_in_the_code_is_documented() -> None:
    documented = _documented()
    named = {(m, p.relative_to(ROOT).as_posix()) for p in _sources() for m in VARIABLE.findall(p.read_text())}
    assert len(named) > 10  # the scan sees the code
    undocumented = sorted(f"{name} ({where})" for name, where in named if name not in documented)
    assert undocumented == []


def _string_value(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute):
        return constants.get(node.attr)
    return None


def test_every_prefix_loaded_from_the_environment_is_documented() -> None:
    """``load(Struct, PREFIX, env)`` anywhere in the installed code uses a documented prefix."""
    constants: dict[str, str] = {}
    trees = [(p, ast.parse(p.read_text())) for p in _sources()]
    for _path, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                        constants[target.id] = node.value.value
    documented = {*SERVICE_ENV_PREFIXES.values(), DATA_ENV_PREFIX}  # DataConfig, ClientConfig
    for env in configuration.service_env().values():
        documented |= set(env)
    loaded: set[str] = set()
    for path, tree in trees:
        if path == ROOT / "shared" / "settings" / "env.py":
            continue  # load_service_config loads SERVICE_ENV_PREFIXES, documented above
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "load":
                assert len(node.args) >= 2, f"{path}: load() without a prefix"
                prefix = _string_value(node.args[1], constants)
                assert prefix is not None, f"{path}:{node.lineno}: the prefix must be a named constant"
                loaded.add(prefix)
    assert loaded, "the scan found no load() call"
    assert sorted(loaded - documented) == []


def test_every_runtime_key_is_documented_and_nothing_else() -> None:
    runtime = {name for name in _documented() if not name.startswith(("MEMORYD_", "OTEL_"))}
    assert runtime == all_setting_names()


def test_every_field_says_what_it_means() -> None:
    # rows() refuses a field without a comment; render() calls it for every Struct
    assert configuration.render().count("\n| `") == len(_documented())
    with pytest.raises(ValueError, match="no comment says what undocumented"):
        rows(Bare, lambda f: f.name)


def test_only_main_reads_the_process_environment() -> None:
    readers = []
    for path in _sources():
        if path.relative_to(ROOT).parts[0] == "memoryd":
            continue  # applications and the command line are entry points of their own
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert readers == ["shared/service.py:" + str(_main_line())]


def _main_line() -> int:
    tree = ast.parse((ROOT / "shared" / "service.py").read_text())
    return next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "environ")
