"""Import httpx once without ``httpx._main``, its command line client.

``import httpx`` imports ``httpx._main``, which pulls in rich, click and pygments when they are installed: a
third of a cold ``import perplexed``. The package ``__init__`` imports this module before anything else, so it
is where the core first imports httpx: with ``httpx._main`` blocked for that one import, httpx binds its
stand-in ``main``, which is then replaced by a function that imports the real command line client on first call.
``import httpx._main`` keeps working (the block is lifted as soon as httpx is imported). An application that
imported httpx before perplexed is left as it is.
"""

from __future__ import annotations

import sys
from typing import Any


def _main(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - httpx's own command line client
    from httpx._main import main

    return main(*args, **kwargs)


def import_httpx() -> None:
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    sys.modules["httpx._main"] = None  # type: ignore[assignment]  # "from ._main import main" -> ImportError
    try:
        import httpx
    finally:
        if "httpx._main" in sys.modules and sys.modules["httpx._main"] is None:
            del sys.modules["httpx._main"]
    httpx.main = _main  # type: ignore[assignment]  # the click Command, once called


import_httpx()
