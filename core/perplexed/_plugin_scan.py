"""Pydantic's plugin discovery, without its metadata scan when there is nothing to find (issue 35).

The first validator pydantic builds in a process asks :mod:`importlib.metadata` for the entry points of the
``pydantic`` group: every installed distribution's metadata is parsed, a tenth of a ``perplexed search`` process.
:func:`spare_the_scan` (called by :mod:`perplexed._models` just before its first model) reads what that scan
would read, each ``entry_points.txt`` on ``sys.path``, and looks only for a ``[pydantic]`` section: when none
has one, pydantic's own scan could only find no plugin, so its plugin table is filled with that answer (empty).
When any distribution declares the group, or the environment is one this cannot read as importlib.metadata
does (a meta path finder with distributions of its own, a zip file on ``sys.path``, a file it cannot read),
nothing is done and pydantic scans and loads its plugins itself, as always. ``PYDANTIC_DISABLE_PLUGINS`` is
pydantic's to read: when it is set, nothing is done either. No plugin is ever disabled.
"""

from __future__ import annotations

import os
import sys

__all__ = ["declares_pydantic_plugins", "spare_the_scan"]

GROUP = "pydantic"


def _has_group(data: bytes) -> bool:
    """Whether an ``entry_points.txt`` has a section of the group, as importlib.metadata reads a section line
    (stripped, ``[`` ... ``]``, the name is the line with its brackets stripped); unreadable text counts as one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    for line in text.splitlines():
        value = line.strip()
        if value.startswith("[") and value.endswith("]") and value.strip("[]") == GROUP:
            return True
    return False


def declares_pydantic_plugins() -> bool:
    """True unless no distribution that :func:`importlib.metadata.distributions` finds declares an entry point
    of the ``pydantic`` group: also True (unknown) where this cannot read what importlib.metadata reads."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:  # importlib.metadata asks every finder that has find_distributions
        if getattr(finder, "find_distributions", None) is not None and finder is not PathFinder:
            return True
    for entry in sys.path:  # PathFinder's distributions: the *.dist-info and *.egg-info of each entry
        if not isinstance(entry, str):
            return True
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):
                return True  # a zip file (importlib.metadata reads its members): not read here
            continue
        egg = os.path.basename(root).lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if not (low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info")):
                continue
            try:
                with open(os.path.join(root, child, "entry_points.txt"), "rb") as file:
                    data = file.read()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                continue  # no entry points (importlib.metadata reads none either)
            except OSError:
                return True
            if _has_group(data):
                return True
    return False


def spare_the_scan() -> None:
    """Before the first validator is built: when no distribution declares a pydantic plugin, give pydantic's
    plugin table the answer its scan would give (empty), so the scan does not run. Anything else (plugins
    declared, the table already filled, ``PYDANTIC_DISABLE_PLUGINS`` set, a pydantic without this table):
    nothing is done."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") is not None:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # pragma: no cover - a pydantic without the plugin loader
        return
    if getattr(_loader, "_plugins", False) is not None or getattr(_loader, "_loading_plugins", True) is not False:
        return
    if not declares_pydantic_plugins():
        _loader._plugins = {}
