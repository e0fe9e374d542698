"""Import httpx without ``httpx._main``, its command line client, and only when something needs it.

``import httpx`` imports ``httpx._main``, which pulls in rich, click and pygments when they are installed: a
third of a cold ``import httpx``. The package ``__init__`` installs this module's finder before anything else:
the first import of httpx in the process (the core's, or the application's) then runs with ``httpx._main``
blocked, so httpx binds its stand-in ``main``, which is replaced by a function that imports the real command line
client on first call. ``import httpx._main`` keeps working (the block is lifted as soon as httpx is imported).
An application that imported httpx before perplexed is left as it is.

httpx itself is not imported by ``import perplexed``, nor by a search that only calls in-process providers
(``local``, a function): the modules a search imports name httpx in annotations, or import it where a request is
made (issue 35: cold start).
"""

from __future__ import annotations

import importlib.machinery
import sys
from types import ModuleType
from typing import Any


def _main(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - httpx's own command line client
    from httpx._main import main

    return main(*args, **kwargs)


def _exec_blocked(exec_module: Any, module: ModuleType) -> None:
    """Run httpx's ``__init__`` with ``httpx._main`` blocked, then bind the lazy ``main``."""
    blocked = "httpx._main" not in sys.modules
    if blocked:
        sys.modules["httpx._main"] = None  # type: ignore[assignment]  # "from ._main import main" -> ImportError
    try:
        exec_module(module)
    finally:
        if blocked and "httpx._main" in sys.modules and sys.modules["httpx._main"] is None:
            del sys.modules["httpx._main"]
    module.main = _main  # type: ignore[attr-defined]  # the click Command, once called


class _HttpxFinder:
    """Asked first, for ``httpx`` only, once: finds httpx where the rest of ``sys.meta_path`` would, and has its
    loader run the package with ``httpx._main`` blocked. A meta path finder by protocol (no ``importlib.abc``:
    see :mod:`perplexed._moved`); it leaves ``sys.meta_path`` as soon as it is asked for httpx."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "httpx":
            return None
        _uninstall()  # (the import system's loop over sys.meta_path stops at the spec returned below)
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None:
            return None  # not installed: no finder has it, the import machinery says so
        if "httpx._main" in sys.modules:  # pragma: no cover - the client without its package: leave it alone
            return spec
        loader: Any = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        own = getattr(loader, "__dict__", None)
        if exec_module is None or own is None or "exec_module" in own:  # pragma: no cover - an unusual loader
            return spec  # httpx as it comes

        def blocked_exec(module: ModuleType) -> None:
            del loader.exec_module  # back to the loader's own: it may serve other modules too (a zip importer)
            _exec_blocked(exec_module, module)

        loader.exec_module = blocked_exec  # for this one execution of httpx's __init__
        return spec


def _uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _HttpxFinder)]


def install() -> None:
    """Block ``httpx._main`` for the first import of httpx, whenever it comes (idempotent; nothing to do when
    httpx is already imported)."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    if not any(isinstance(finder, _HttpxFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _HttpxFinder())


def import_httpx() -> None:
    """Import httpx now (``httpx._main`` blocked as above, unless httpx is already imported)."""
    install()
    import httpx  # noqa: F401


install()
