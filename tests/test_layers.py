"""The house rules, checked from the code: layers one way, no import circles, short modules.

The layer and forbidden contracts live in pyproject.toml (`[tool.importlinter]`) and run
through import-linter; the circle check covers what a layers contract cannot see, modules of
one folder importing each other in a ring. Imports under `if TYPE_CHECKING:` are annotations,
not arrows, and are left out of both.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "deepep_calc"
LONG = 400  # lines; a longer module says at its top why it is one module


def test_the_import_contracts_hold() -> None:
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if m.startswith("deepep_calc"))
    edges = {
        m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i in modules) for m in modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recurse = False
            for j in range(i, len(edges[node])):
                nxt = edges[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def test_no_import_circles() -> None:
    graph = grimp.build_graph("deepep_calc", exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_the_circle_check_finds_a_circle() -> None:
    """The check above can fail: a graph with a ring in it is reported."""
    graph = grimp.ImportGraph()
    for a, b in (
        ("deepep_calc.a", "deepep_calc.b"),
        ("deepep_calc.b", "deepep_calc.c"),
        ("deepep_calc.c", "deepep_calc.a"),
    ):
        graph.add_import(importer=a, imported=b)
    graph.add_import(importer="deepep_calc.c", imported="deepep_calc.d")
    assert _cycles(graph) == [["deepep_calc.a", "deepep_calc.b", "deepep_calc.c"]]


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_long_module_says_why_it_is_one(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count("\n") <= LONG:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert "Why one module" in doc, f"{path.name}: {text.count(chr(10))} lines and no 'Why one module' note"


def test_the_readme_layout_names_real_folders() -> None:
    """Every path the README's layout table names exists, and every layer folder is named."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Layout") : text.index("## Documentation")]
    named = {m.rstrip("/") for m in re.findall(r"`(src/deepep_calc/[\w/.]+)`", table)}
    assert named, "no paths in the layout table"
    for path in named:
        assert (ROOT / path).exists(), path
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= {Path(p).parts[2] for p in named}, folders - {Path(p).parts[2] for p in named}


LONG_FUNCTION = 60  # lines
MANY_PARAMETERS = 5  # self and cls not counted
REASON = "# size:"


def oversized(source: str) -> list[tuple[int, str, bool]]:
    """(line, name, has a reason) of every function over LONG_FUNCTION lines or
    MANY_PARAMETERS parameters; the reason is a `# size: ...` line right above the def (or
    above its decorators)."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = node.args
        params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
        params -= 1 if a.args and a.args[0].arg in ("self", "cls") else 0
        length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
        if length <= LONG_FUNCTION and params <= MANY_PARAMETERS:
            continue
        top = min([d.lineno for d in node.decorator_list] + [node.lineno])
        reason = top >= 2 and lines[top - 2].strip().startswith(REASON)
        out.append((node.lineno, node.name, bool(reason)))
    return out


def test_a_long_function_or_a_long_signature_says_why() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name, reason in oversized(path.read_text())
        if not reason
    ]
    assert offenders == [], f"split them, or write `{REASON} <why>` above the def: {offenders}"


def test_the_size_check_finds_a_long_function_and_reads_its_reason() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LONG_FUNCTION))
    bare = (
        f"def f():\n{body}\n\ndef g(a, b, c, d, e, f):\n    pass\n\ndef h(self, a, b, c, d, e):\n    pass\n"
    )
    assert [(n, r) for _, n, r in oversized(bare)] == [("f", False), ("g", False)]
    told = f"# size: one table, row by row\n@cache\ndef f():\n{body}\n"
    assert [(n, r) for _, n, r in oversized("from functools import cache\n" + told)] == [("f", True)]
