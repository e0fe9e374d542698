"""The garbage collector of a ``perplexed`` process while the command's modules load (issue 35).

:mod:`perplexed.cli` imports this module first and calls :func:`resume` once its own imports are done. When the
process is the ``perplexed`` command (its console script, or ``python -m perplexed``), automatic collections
pause meanwhile, and :func:`resume` moves what was loaded into the permanent generation (:func:`gc.freeze`:
modules, classes, functions, schemas, which live as long as the process) before collections start again: the
fifty-odd collections that would walk them while they load, and again at every later full collection, are
spared. Imported by anything else (a test, a program calling ``main([...])``), this module does nothing.
"""

from __future__ import annotations

import gc
import os
import sys

__all__ = ["resume"]


def _is_the_command() -> bool:
    """Whether this process runs the ``perplexed`` command: ``python -m perplexed``, or the console script
    (``__main__`` is a file named ``perplexed``; ``perplexed.exe`` or ``perplexed-script.py`` on Windows)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if getattr(spec, "name", None) == "perplexed.__main__":
        return True
    name = os.path.basename(str(getattr(main, "__file__", "") or "")).lower()
    return name in ("perplexed", "perplexed.exe", "perplexed-script.py")


_paused = _is_the_command() and gc.isenabled()
if _paused:
    gc.disable()


def resume() -> None:
    """The command's modules are loaded: freeze what they made and turn collections back on (only when this
    module paused them)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
