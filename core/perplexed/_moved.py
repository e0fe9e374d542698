"""The old import paths of modules that moved into folders (``perplexed._engine`` is now
``perplexed.engine._engine``): importing an old path gives the module at its new one, the same object, so code
written against the old layout (``import perplexed._policy``, ``mock.patch("perplexed._http.x")``) keeps working
for one minor version. Nothing is imported until an old path is asked for."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: old module path -> new module path (a package's old path covers its submodules)
MOVED: dict[str, str] = {
    "perplexed._cli_fetch": "perplexed.commands._fetch",
    "perplexed._cli_providers": "perplexed.commands._providers",
    "perplexed._cli_eval": "perplexed.commands._eval",
    "perplexed._mcp_http": "perplexed.mcp._http",
    "perplexed._mcp_status": "perplexed.mcp._status",
    "perplexed._answer": "perplexed.grounding._answer",
    "perplexed._answer_plan": "perplexed.grounding._answer_plan",
    "perplexed._grounding": "perplexed.grounding._grounding",
    "perplexed._verify": "perplexed.grounding._verify",
    "perplexed._lexical": "perplexed.grounding._lexical",
    "perplexed._eval": "perplexed.evaluation._eval",
    "perplexed._eval_report": "perplexed.evaluation._eval_report",
    "perplexed._eval_html": "perplexed.evaluation._eval_html",
    "perplexed._search": "perplexed.operations._search",
    "perplexed._fetch": "perplexed.operations._fetch",
    "perplexed.chain": "perplexed.engine.chain",
    "perplexed._engine": "perplexed.engine._engine",
    "perplexed._adaptive": "perplexed.engine._adaptive",
    "perplexed._strategies": "perplexed.engine._strategies",
    "perplexed._governance": "perplexed.engine._governance",
    "perplexed._hits": "perplexed.engine._hits",
    "perplexed._http": "perplexed.net._http",
    "perplexed._decode": "perplexed.net._decode",
    "perplexed._ssrf": "perplexed.net._ssrf",
    "perplexed._portal": "perplexed.net._portal",
    "perplexed._fetch_net": "perplexed.net._fetch_net",
    "perplexed._extract": "perplexed.extract._extract",
    "perplexed._extract_worker": "perplexed.extract._worker",
    "perplexed._doctext": "perplexed.extract._doctext",
    "perplexed._index": "perplexed.index",
    "perplexed._policy": "perplexed.policy._policy",
    "perplexed._options": "perplexed.policy._options",
    "perplexed._failures": "perplexed.policy._failures",
    "perplexed._status": "perplexed.policy._status",
    "perplexed._wire": "perplexed.policy._wire",
    "perplexed._bounds": "perplexed.policy._bounds",
    "perplexed._keywords": "perplexed.policy._keywords",
    "perplexed._settings": "perplexed.policy._settings",
    "perplexed._routing": "perplexed.policy._routing",
    "perplexed._ledger": "perplexed.policy._ledger",
    "perplexed._optionspec": "perplexed.policy._optionspec",
    "perplexed._lexicon": "perplexed.grounding._lexicon",
    "perplexed._gov_settings": "perplexed.engine._gov_settings",
    "perplexed._gov_identity": "perplexed.engine._gov_identity",
    "perplexed._gov_spend": "perplexed.engine._gov_spend",
    "perplexed._tools": "perplexed.tools._catalogue",
    "perplexed._toolschema": "perplexed.tools._schema",
    "perplexed._usage": "perplexed.engine._usage",
    "perplexed._cli_usage": "perplexed.commands._usage",
    "perplexed._pagetype": "perplexed.extract._pagetype",
    "perplexed._structured": "perplexed.extract._structured",
    "perplexed._strategies_extract": "perplexed.extract._strategies",
}


def _new_name(fullname: str) -> str | None:
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old):]
    return None


class _MovedFinder:
    """Asked first, for old paths only: an old path is answered with the module at its new path. A meta path
    finder and loader by protocol (``find_spec``; ``create_module``, ``exec_module``): not a subclass of
    ``importlib.abc``'s, whose import (importlib.resources, tempfile, zipfile...) cost every ``import perplexed``
    about 7 ms."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("perplexed.") or _new_name(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", self))  # a Loader by protocol

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = _new_name(spec.name)
        assert new is not None
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__  # the import machinery overwrites __spec__ after this returns
        return module

    def exec_module(self, module: ModuleType) -> None:
        alias = module.__spec__.name if module.__spec__ else ""
        module.__spec__ = self._specs.pop(alias, module.__spec__)  # the module keeps its own name and spec


def install() -> None:
    """Answer the old paths (idempotent)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())  # before the path finder: an old path never loads a second copy
