"""Where the local index lives, and how paths are shown and checked (no SQLite here)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError

INDEX_ENV = "PERPLEXED_LOCAL_INDEX"
INDEX_FILENAME = "local-index.sqlite3"

IndexPath = str | os.PathLike[str] | None
PathsArg = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


def platform_data_dir(
    app: str = "perplexed",
    *,
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Path:
    """The per-user data folder for ``app``, by the platform's convention, with the standard library only.

    Linux and other Unixes: ``$XDG_DATA_HOME/app`` (default ``~/.local/share/app``); macOS:
    ``~/Library/Application Support/app``; Windows: ``%LOCALAPPDATA%\\app``. The same folders as
    ``platformdirs.user_data_dir(app, appauthor=False)``.
    """
    platform = sys.platform if platform is None else platform
    env = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or env.get("APPDATA") or str(home / "AppData" / "Local")
        return Path(base) / app
    if platform == "darwin":
        return home / "Library" / "Application Support" / app
    xdg = env.get("XDG_DATA_HOME", "").strip()
    base_path = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "share"
    return base_path / app


def user_data_dir(app: str = "perplexed") -> Path:
    """The per-user data folder: ``platformdirs`` when installed (the ``cli`` extra), else :func:`platform_data_dir`."""
    try:
        import platformdirs
    except ImportError:
        return platform_data_dir(app)
    return Path(platformdirs.user_data_dir(app, appauthor=False))


def default_index_path() -> Path:
    """Where the local index lives: ``$PERPLEXED_LOCAL_INDEX``, else ``local-index.sqlite3`` in the user data folder."""
    override = os.environ.get(INDEX_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return user_data_dir() / INDEX_FILENAME


def resolve_index(index: IndexPath) -> Path:
    return default_index_path() if index is None else Path(index).expanduser()


def is_default(path: Path) -> bool:
    """Whether ``path`` is the per-user index (so that a command needs no ``--index``)."""
    try:
        return os.path.abspath(path) == os.path.abspath(user_data_dir() / INDEX_FILENAME)
    except (OSError, RuntimeError):  # pragma: no cover - no home folder
        return False


def index_option(path: Path) -> str:
    """`` --index PATH`` for a command about ``path``; empty for the per-user index."""
    return "" if is_default(path) else f" --index {path}"


def rebuild_command(path: Path) -> str:
    return "perplexed index --rebuild" + index_option(path)


def hint(path: Path) -> str:
    if os.environ.get(INDEX_ENV, "").strip():
        return f"run `perplexed index PATH` (the index path comes from {INDEX_ENV}={path})"
    return "run `perplexed index PATH` to index a folder of documents"


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as text that SQLite, JSON and a terminal accept.

    A file name that is not valid UTF-8 reaches Python with lone surrogates in place of its bad bytes; those
    bytes are written as ``\\xNN``. The result is the file's key in the index, stable from run to run.
    """
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def as_paths(paths: Any, name: str) -> list[str | os.PathLike[str]]:
    if isinstance(paths, str | os.PathLike):
        return [paths]
    if isinstance(paths, bytes) or not isinstance(paths, Iterable):
        raise ConfigError(f"{name} must be a path or a list of paths, got {type(paths).__name__}")
    items = list(paths)
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise ConfigError(f"{name} must be a path or a list of paths; one item is {item!r}")
    return items


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both absolute, as text)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def unlink_all(path: Path | str, suffixes: Iterable[str]) -> None:
    """Delete ``path`` + each suffix that exists (the index file, its journal, WAL and shared memory)."""
    for suffix in suffixes:
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass
