"""Tests import public names only; a test that still reaches a private module or name says why (issue 41, part 7).

The public surface is what the docs document: ``perplexed``, ``langchain_perplexed``, ``llama_index_perplexed``,
the module part of every mkdocstrings directive (``::: perplexed.store.sqlite.SQLiteStore`` makes
``perplexed.store.sqlite`` public) in README.md and docs/**/*.md, and every module imported in the docs' fenced
python blocks. The set is computed from the docs at run time: documenting a module makes it public.

A *private reach* in a test file is an import of a non-public module of ours, an imported name starting with ``_``,
``importlib.import_module``/``pytest.importorskip`` of a non-public module, a ``"perplexed...."`` string target of
``monkeypatch.setattr``/``delattr``/``mock.patch`` in a non-public module, and ``sys.modules["perplexed._..."]``
(read, ``get``/``pop``/``setdefault``, or ``monkeypatch.setitem``/``delitem``). A reach that stays carries, on the
first line of its statement (for a decorator: the decorator's line), ``# private: <why, three words or more>``.

Code that a test runs in a subprocess (a string of source) is not read: only the test files' own statements.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import io
import re
import textwrap
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGES = ("perplexed", "langchain_perplexed", "llama_index_perplexed")
ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
#: folders under tests/ that hold no test code of ours
SKIPPED_DIRS = frozenset({"data", "__pycache__"})

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)")
_DIRECTIVE = re.compile(r"^[ \t]*:::[ \t]+(?P<path>[A-Za-z_][\w.]*)", re.MULTILINE)
_PRIVATE_COMMENT = re.compile(r"#\s*private:\s*(?P<why>.*)$")
_IMPORTERS = frozenset({"import_module", "importorskip", "__import__"})
_SYS_MODULES_METHODS = frozenset({"get", "pop", "setdefault"})


# ---------------------------------------------------------------------------------------------------------------
# Which modules exist, read from the source tree (nothing of ours is imported to answer)


@functools.cache
def _package_dir(top: str) -> Path | None:
    spec = importlib.util.find_spec(top)  # a top-level spec: finds the folder, runs nothing
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    fallback = ROOT / "core" / top
    return fallback if fallback.is_dir() else None


@functools.cache
def _moved_paths() -> frozenset[str]:
    """The old module paths that ``perplexed._moved`` still answers (read from its source, not imported)."""
    package = _package_dir("perplexed")
    source = package / "_moved.py" if package else None
    if source is None or not source.is_file():
        return frozenset()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            return frozenset(k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return frozenset()


def is_ours(dotted: str) -> bool:
    return dotted.split(".")[0] in PACKAGES


@functools.cache
def module_exists(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of ours (an old moved path counts: it still imports)."""
    parts = dotted.split(".")
    if parts[0] not in PACKAGES:
        return False
    if any(dotted == old or dotted.startswith(old + ".") for old in _moved_paths()):
        return True
    base = _package_dir(parts[0])
    if base is None:
        return False
    path = base.joinpath(*parts[1:])
    return len(parts) == 1 or path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def module_part(dotted: str) -> str:
    """The longest prefix of ``dotted`` that is a module: ``perplexed.store.sqlite.SQLiteStore`` ->
    ``perplexed.store.sqlite``; ``perplexed.search`` -> ``perplexed``."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if module_exists(".".join(parts[:end])):
            return ".".join(parts[:end])
    return parts[0]


# ---------------------------------------------------------------------------------------------------------------
# The public modules, from the docs


def python_blocks(markdown: str) -> Iterator[str]:
    """The fenced ``python``/``py`` code blocks of a markdown page (indented fences, as in tabs, included)."""
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening["fence"]
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        if opening["info"].lower() in ("python", "py", "python3"):
            yield textwrap.dedent("\n".join(body))


def _imported_modules(code: str) -> Iterator[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a block that is not a whole program: read its import lines one by one
        for line in code.splitlines():
            opening = re.match(r"\s*from\s+([\w.]+)\s+import\b", line)  # also the first line of `import (`
            if opening:
                yield opening[1]
            try:
                tree = ast.parse(line.strip())
            except SyntaxError:
                continue
            yield from _modules_of(tree)
        return
    yield from _modules_of(tree)


def _modules_of(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            # ``from perplexed.store import sqlite`` names the module perplexed.store.sqlite as well
            yield from (f"{node.module}.{a.name}" for a in node.names if module_exists(f"{node.module}.{a.name}"))


def public_modules_of(pages: dict[str, str]) -> frozenset[str]:
    """The public modules that the given markdown pages (name -> text) document."""
    public = set(PACKAGES)
    for text in pages.values():
        public.update(module_part(m["path"]) for m in _DIRECTIVE.finditer(text) if is_ours(m["path"]))
        for block in python_blocks(text):
            public.update(m for m in _imported_modules(block) if is_ours(m))
    return frozenset(public)


def doc_pages() -> dict[str, str]:
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in paths}


@functools.cache
def public_modules() -> frozenset[str]:
    return public_modules_of(doc_pages())


# ---------------------------------------------------------------------------------------------------------------
# The private reaches of one file


@dataclass(frozen=True)
class Reach:
    line: int  #: the first line of the statement (of the decorator, for one in a decorator)
    statement: str  #: that line's text, stripped
    what: str  #: what is reached, e.g. "imports perplexed.engine._engine"
    annotated: bool  #: it carries ``# private: <why>`` of three words or more


def _comments(source: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string
    return found


def is_valid_annotation(comment: str | None) -> bool:
    """``# private: <why>`` with at least three words in the why."""
    if comment is None:
        return False
    match = _PRIVATE_COMMENT.search(comment)
    return match is not None and len([w for w in match["why"].split() if re.search(r"\w", w)]) >= 3


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_sys_modules(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "modules"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _is_patcher(func: ast.expr) -> bool:
    """``mock.patch``, ``unittest.mock.patch``, ``patch``, ``mocker.patch`` (not ``patch.object``/``patch.dict``)."""
    return _call_name(func) == "patch"


class _Finder(ast.NodeVisitor):
    def __init__(self, public: frozenset[str]) -> None:
        self.public = public
        self.found: list[tuple[ast.AST, str]] = []

    def _private_module(self, dotted: str) -> bool:
        return is_ours(dotted) and dotted not in self.public

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self._private_module(alias.name):
                self.found.append((node, f"imports {alias.name}"))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not is_ours(module):
            return
        if self._private_module(module):
            self.found.append((node, f"imports {module}"))
            return
        for alias in node.names:
            if alias.name.startswith("_"):
                self.found.append((node, f"imports the private name {module}.{alias.name}"))
            elif module_exists(f"{module}.{alias.name}") and self._private_module(f"{module}.{alias.name}"):
                self.found.append((node, f"imports {module}.{alias.name}"))

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node.func)
        first = _string(node.args[0]) if node.args else None
        if name in _IMPORTERS and first and self._private_module(first):
            self.found.append((node, f"{name}({first!r})"))
        elif (name in ("setattr", "delattr") or _is_patcher(node.func)) and first and is_ours(first):
            if isinstance(node.func, ast.Attribute) or _is_patcher(node.func):
                target = module_part(first.rsplit(".", 1)[0]) if "." in first else first
                if self._private_module(target):
                    self.found.append((node, f"{name} target {first!r} (module {target})"))
        elif name in ("setitem", "delitem") and len(node.args) >= 2 and _is_sys_modules(node.args[0]):
            key = _string(node.args[1])
            if key and self._private_module(key):
                self.found.append((node, f"sys.modules[{key!r}] via {name}"))
        elif (
            name in _SYS_MODULES_METHODS
            and isinstance(node.func, ast.Attribute)
            and _is_sys_modules(node.func.value)
            and first
            and self._private_module(first)
        ):
            self.found.append((node, f"sys.modules.{name}({first!r})"))
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = _string(node.slice)
        if _is_sys_modules(node.value) and key and self._private_module(key):
            self.found.append((node, f"sys.modules[{key!r}]"))
        self.generic_visit(node)


def _anchors(tree: ast.AST) -> dict[ast.AST, int]:
    """Each node -> the first line of the statement that holds it (a decorator is its own statement)."""
    anchors: dict[ast.AST, int] = {}

    def walk(node: ast.AST, line: int) -> None:
        for child in ast.iter_child_nodes(node):
            child_line = line
            if isinstance(child, ast.stmt):
                child_line = child.lineno
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and child in node.decorator_list:
                child_line = child.lineno  # type: ignore[attr-defined]
            anchors[child] = child_line
            walk(child, child_line)

    walk(tree, 1)
    return anchors


def find_reaches(source: str, public: frozenset[str] | None = None) -> list[Reach]:
    """Every private reach of a test file's source, one per statement, in line order."""
    tree = ast.parse(source)
    finder = _Finder(public_modules() if public is None else public)
    finder.visit(tree)
    anchors = _anchors(tree)
    comments = _comments(source)
    lines = source.splitlines()
    by_line: dict[int, list[str]] = {}
    for node, what in finder.found:
        by_line.setdefault(anchors[node], []).append(what)
    return [
        Reach(line, lines[line - 1].strip(), "; ".join(whats), is_valid_annotation(comments.get(line)))
        for line, whats in sorted(by_line.items())
    ]


# ---------------------------------------------------------------------------------------------------------------
# The guard: every test file, grouped by folder (tests/*.py, then each sub-folder)


def _test_files() -> list[Path]:
    return sorted(
        p
        for p in TESTS.rglob("*.py")
        if not SKIPPED_DIRS.intersection(p.relative_to(TESTS).parts[:-1]) and "__pycache__" not in p.parts
    )


def _group(path: Path) -> str:
    parts = path.relative_to(TESTS).parts
    return "top-level" if len(parts) == 1 else parts[0]


GROUPS = sorted({_group(p) for p in _test_files()})


def unannotated_reaches(group: str) -> list[str]:
    problems = []
    for path in _test_files():
        if _group(path) != group:
            continue
        for reach in find_reaches(path.read_text(encoding="utf-8")):
            if not reach.annotated:
                problems.append(f"{path.relative_to(ROOT)}:{reach.line} {reach.statement}  [{reach.what}]")
    return problems


@pytest.mark.parametrize("group", GROUPS)
def test_test_files_reach_private_code_only_where_they_say_why(group: str) -> None:
    problems = unannotated_reaches(group)
    assert not problems, (
        f"{len(problems)} private reach(es) without a `# private: <why>` comment (three words or more) on the "
        "statement's first line; import the public name instead where the docs document one:\n" + "\n".join(problems)
    )


# ---------------------------------------------------------------------------------------------------------------
# The guard itself catches what it claims

_PUBLIC = frozenset({"perplexed", "perplexed.store", "perplexed.store.sqlite", "perplexed.agent"})


def _whats(source: str) -> list[tuple[int, str, bool]]:
    return [(r.line, r.what, r.annotated) for r in find_reaches(textwrap.dedent(source), _PUBLIC)]


def test_a_public_import_is_no_reach() -> None:
    assert _whats("from perplexed import ConfigError\nimport perplexed.store.sqlite\nfrom perplexed.store import sqlite\n") == []
    assert _whats("import json\nfrom os import _exit\n") == []  # not ours


def test_an_unannotated_private_import_is_a_reach() -> None:
    assert _whats("from perplexed.policy._status import reason_for\n") == [(1, "imports perplexed.policy._status", False)]
    assert _whats("import perplexed.engine.chain as chain\n") == [(1, "imports perplexed.engine.chain", False)]
    assert _whats("from perplexed import engine\n") == [(1, "imports perplexed.engine", False)]
    assert _whats("from perplexed.agent import _retry_after\n") == [
        (1, "imports the private name perplexed.agent._retry_after", False)
    ]
    assert _whats("from langchain_perplexed._config import X\n") == [(1, "imports langchain_perplexed._config", False)]


def test_an_annotated_private_import_passes_and_a_short_why_does_not() -> None:
    source = "from perplexed.policy._status import reason_for  # private: the status table, tested row by row\n"
    assert _whats(source) == [(1, "imports perplexed.policy._status", True)]
    assert _whats("from perplexed.policy._status import reason_for  # private: status table\n")[0][2] is False
    assert _whats("from perplexed.policy._status import reason_for  # the status table is tested here\n")[0][2] is False


def test_one_comment_on_the_first_line_covers_a_multi_line_statement() -> None:
    annotated = """\
        from perplexed.engine._engine import (  # private: the run loop's retry order
            Engine,
            run,
        )
        """
    assert _whats(annotated) == [(1, "imports perplexed.engine._engine", True)]
    misplaced = """\
        from perplexed.engine._engine import (
            Engine,  # private: the run loop's retry order
        )
        """
    assert _whats(misplaced) == [(1, "imports perplexed.engine._engine", False)]


def test_string_targets_and_dynamic_imports_are_reaches() -> None:
    source = """\
        import importlib, sys
        from unittest import mock
        import pytest

        def test_x(monkeypatch):
            monkeypatch.setattr("perplexed.net._http.time.monotonic", lambda: 0.0)
            monkeypatch.setattr("perplexed.store.sqlite.time", None)  # a public module: no reach
            with mock.patch("perplexed.engine._engine.sleep"):  # private: the back-off sleeps are not observable
                pass
            importlib.import_module("perplexed.policy._wire")
            pytest.importorskip("perplexed.store.redis")
            sys.modules["perplexed.engine._governance"].reset()
            monkeypatch.delitem(sys.modules, "perplexed.index._db")

        @mock.patch("perplexed._status.table")
        def test_y():
            pass
        """
    assert _whats(source) == [
        (6, "setattr target 'perplexed.net._http.time.monotonic' (module perplexed.net._http)", False),
        (8, "patch target 'perplexed.engine._engine.sleep' (module perplexed.engine._engine)", True),
        (10, "import_module('perplexed.policy._wire')", False),
        (11, "importorskip('perplexed.store.redis')", False),
        (12, "sys.modules['perplexed.engine._governance']", False),
        (13, "sys.modules['perplexed.index._db'] via delitem", False),
        (15, "patch target 'perplexed._status.table' (module perplexed._status)", False),
    ]


def test_the_public_set_is_read_from_directives_and_python_blocks() -> None:
    page = textwrap.dedent(
        """\
        ::: perplexed.store.sqlite.SQLiteStore
        ::: perplexed.search

        ```python
        from perplexed.agent import AgentClient
        import perplexed.doctor
        ```

        ```text
        from perplexed.engine import chain
        ```

        === "tab"

            ```python
            from perplexed.providers.local import build_index
            ```
        """
    )
    public = public_modules_of({"page.md": page})
    assert public == frozenset(
        {*PACKAGES, "perplexed.store.sqlite", "perplexed.agent", "perplexed.doctor", "perplexed.providers.local"}
    )
    assert "perplexed.engine" not in public  # a text block is not python


def test_the_real_docs_make_the_documented_modules_public() -> None:
    public = public_modules()
    assert {"perplexed.store.sqlite", "perplexed.store.redis", "perplexed.doctor", "perplexed.agent"} <= public
    assert "perplexed.engine._engine" not in public and "perplexed.policy._status" not in public
