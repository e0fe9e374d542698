"""``import perplexed`` is lazy (issue 35): each public name is written three times in ``perplexed/__init__.py`` —
a ``TYPE_CHECKING`` import for type checkers and the docs, ``__all__``, and the ``_LAZY`` table that loads it on
first use. This test keeps the three in step, so a name added to one and not the others fails here."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import perplexed

INIT = Path(perplexed.__file__)


def _type_checking_imports() -> dict[str, str]:
    """name -> module, from the ``if TYPE_CHECKING:`` blocks of perplexed/__init__.py."""
    out: dict[str, str] = {}
    for node in ast.parse(INIT.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    for alias in stmt.names:
                        out[alias.asname or alias.name] = stmt.module
    return out


def test_every_public_name_is_lazy_typed_and_loads_from_where_it_is_typed() -> None:
    lazy = perplexed._LAZY  # private: the table under test
    typed = _type_checking_imports()
    public = set(perplexed.__all__)
    submodules = {name for name in public - set(lazy) if typed.get(name) == "perplexed"}  # providers, telemetry
    assert public - set(lazy) == submodules, sorted(public - set(lazy) - submodules)
    for name in submodules:
        assert getattr(perplexed, name) is importlib.import_module(f"perplexed.{name}")
    assert set(lazy) <= set(typed), sorted(set(lazy) - set(typed))
    for name, module in lazy.items():
        assert typed[name] == module, (name, typed[name], module)
        assert getattr(perplexed, name) is getattr(importlib.import_module(module), name)
