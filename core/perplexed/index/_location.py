"""Where the local index lives, and how paths are shown and checked (no SQLite here)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perplexed._errors import ConfigError

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


PROJECT_DIR = ".perplexed"
PROJECT_INDEX = "index.db"


@dataclass(frozen=True)
class IndexLocation:
    """Which index a command or a ``local`` provider uses, and why.

    ``source`` is ``"argument"`` (an explicit ``index=`` / ``--index``), ``"environment"``
    (``$PERPLEXED_LOCAL_INDEX``), ``"project"`` (``.perplexed/index.db`` in the nearest folder, from the working
    folder upward, that holds a ``.perplexed/`` folder) or ``"user"`` (the per-user data folder). ``why`` says
    it in words.
    """

    path: Path
    source: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"path": str(self.path), "source": self.source, "why": self.why}


def find_project_dir(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``.perplexed/`` folder in ``start`` (default: the working folder) or one of its parents, as
    git finds ``.git``; None when there is none (or the working folder is gone)."""
    try:
        folder = Path(os.path.abspath(start if start is not None else os.getcwd()))
    except OSError:  # the working folder was deleted
        return None
    for candidate in (folder, *folder.parents):
        project = candidate / PROJECT_DIR
        try:
            if project.is_dir():
                return project
        except OSError:  # pragma: no cover - an unreadable parent: keep looking further up
            continue
    return None


def locate_index(index: IndexPath = None) -> IndexLocation:
    """Which index is in use, and why. The first that applies:

    1. ``index`` (a path given by the caller: ``index=``, ``--index``);
    2. ``$PERPLEXED_LOCAL_INDEX``;
    3. ``index.db`` in the nearest ``.perplexed/`` folder, looking from the working folder upward (the
       quickstart's ``perplexed index examples/corpus --index .perplexed/index.db`` creates one in the clone);
    4. ``local-index.sqlite3`` in the per-user data folder.
    """
    if index is not None:
        return IndexLocation(Path(index).expanduser(), "argument", "given with --index (index= in Python)")
    override = os.environ.get(INDEX_ENV, "").strip()
    if override:
        return IndexLocation(Path(override).expanduser(), "environment", f"from {INDEX_ENV}")
    project = find_project_dir()
    if project is not None:
        return IndexLocation(
            project / PROJECT_INDEX, "project",
            f"the project's index: {PROJECT_DIR}/ found in {project.parent}, looking from the working folder up",
        )
    return IndexLocation(
        user_data_dir() / INDEX_FILENAME, "user",
        f"the per-user index: no {PROJECT_DIR}/ folder in the working folder or above it",
    )


def default_index_path() -> Path:
    """The index used when none is given: ``$PERPLEXED_LOCAL_INDEX``, else ``.perplexed/index.db`` in the
    nearest ``.perplexed/`` folder from the working folder upward, else ``local-index.sqlite3`` in the user data
    folder (see :func:`locate_index`)."""
    return locate_index().path


def resolve_index(index: IndexPath) -> Path:
    return default_index_path() if index is None else Path(index).expanduser()


def is_default(path: Path) -> bool:
    """Whether ``path`` is the index found without ``--index`` (so that a command about it needs none)."""
    try:
        return os.path.abspath(path) == os.path.abspath(default_index_path())
    except (OSError, RuntimeError):  # pragma: no cover - no home folder
        return False


def index_option(path: Path) -> str:
    """`` --index PATH`` for a command about ``path``; empty for the index found without one."""
    return "" if is_default(path) else f" --index {path}"


def rebuild_command(path: Path) -> str:
    return "perplexed index --rebuild" + index_option(path)


def hint(path: Path) -> str:
    if os.environ.get(INDEX_ENV, "").strip():
        return f"run `perplexed index PATH` (the index path comes from {INDEX_ENV}={path})"
    option = index_option(path).strip()
    run = "run `perplexed index PATH`" + (f" with `{option}`" if option else "") + " to index a folder of documents"
    if option or locate_index().source != "user":
        return run
    try:
        folder = os.getcwd()
    except OSError:  # pragma: no cover - the working folder was deleted
        folder = "the working folder"
    return (
        f"{run}, or point at an existing index with --index FILE (index= in Python) or {INDEX_ENV}=FILE. "
        f"Looked for {PROJECT_DIR}/{PROJECT_INDEX} in {folder} and every folder above it, then in the per-user "
        "data folder"
    )


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
