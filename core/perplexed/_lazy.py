"""Names a module loads on first use (PEP 562): one ``__getattr__``/``__dir__`` pair for every module that keeps
an import off its own import (the adapters' packages, ``perplexed.integration``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy"]


def lazy(module: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``module``'s ``__getattr__`` and ``__dir__`` for ``names`` (a name -> the module that defines it): the first
    access imports that module and keeps the value in ``module``'s namespace (later accesses are plain look-ups);
    any other name is an ``AttributeError`` as for a module without the hook."""
    namespace = sys.modules[module].__dict__

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(where), name)
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
