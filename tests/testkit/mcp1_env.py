"""Create (or reuse) the private virtualenv that holds an ``mcp`` 1.x client for the test suite.

perplexed's own environment runs the ``mcp`` 2.x SDK; clients in the wild still run 1.x (for example
through ``langchain-mcp-adapters``). To check that ``perplexed mcp`` keeps serving both protocol eras, a
test drives the server from a *second* environment: ``mcp`` 1.x and ``langchain-mcp-adapters`` in their
own virtualenv under ``<repo>/.mcp1/venv`` (gitignored). The two never share a process: the test runs a
client program with this venv's interpreter, and the server from perplexed's venv.

Usage::

    python tests/testkit/mcp1_env.py          # create or reuse, print the venv's python
    python tests/testkit/mcp1_env.py --force  # rebuild from scratch

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
MCP1_HOME = REPO_ROOT / ".mcp1"
VENV_DIR = MCP1_HOME / "venv"
STAMP_NAME = "perplexed-mcp1-stamp.json"
LOCK_PATH = MCP1_HOME / "venv.lock"

MCP_VERSION = "1.30.0"
ADAPTERS_VERSION = "0.3.2"

# mcp 1.x (the last 1.x release) with langchain-mcp-adapters and their full dependency closure,
# resolved together from PyPI and pinned so that every machine (dev, CI) runs the same client.
PINS: tuple[str, ...] = (
    f"mcp=={MCP_VERSION}",
    f"langchain-mcp-adapters=={ADAPTERS_VERSION}",
    "annotated-types==0.8.0",
    "anyio==4.16.0",
    "attrs==26.1.0",
    "certifi==2026.10.19.post1",
    "cffi==2.1.1",
    "charset-normalizer==3.5.3",
    "click==8.5.1",
    "cryptography==50.0.2",
    "distro==1.9.0",
    "h11==0.16.0",
    "httpcore==1.0.9",
    "httpcore2==2.16.2",
    "httpx==0.29.0",
    "httpx-sse==0.4.3",
    "httpx2==2.16.2",
    "idna==3.20",
    "jsonpatch==1.48",
    "jsonpointer==3.12",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "langchain-core==1.8.3",
    "langchain-protocol==0.0.20",
    "langsmith==0.15.1",
    "orjson==3.13.0",
    "packaging==26.4",
    "pycparser==3.12",
    "pydantic==2.14.4",
    "pydantic-settings==2.16.3",
    "pydantic_core==2.50.5",
    "PyJWT==2.15.1",
    "python-dotenv==1.2.4",
    "python-multipart==0.0.34",
    "PyYAML==6.0.4",
    "referencing==0.37.0",
    "requests==2.34.2",
    "requests-toolbelt==1.0.0",
    "rpds-py==2026.9.1",
    "sniffio==1.3.1",
    "sse-starlette==3.7.1",
    "starlette==1.10.0",
    "tenacity==9.2.1",
    "truststore==0.10.5",
    "typing-inspection==0.4.5",
    "typing_extensions==4.16.0",
    "urllib3==2.8.0",
    "uuid_utils==0.19.0",
    "uvicorn==0.55.0",
    "websockets==17.4",
    "xxhash==4.1.0",
    "zstandard==0.25.0",
)

# What "works" means for a reused venv: the client modules import, and the installed versions are the pinned ones.
_SMOKE = (
    "import importlib.metadata as md\n"
    "import mcp.client.stdio, mcp.client.streamable_http\n"
    "from langchain_mcp_adapters.client import MultiServerMCPClient\n"
    "print(md.version('mcp'), md.version('langchain-mcp-adapters'))\n"
)


class Mcp1EnvError(RuntimeError):
    """The mcp 1.x test virtualenv could not be created or does not work."""


def _bin_dir(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin")


def venv_python(venv: Path = VENV_DIR) -> Path:
    """The interpreter inside the mcp 1.x venv (it may not exist yet)."""
    return _bin_dir(venv) / ("python.exe" if os.name == "nt" else "python")


def _stamp() -> dict[str, str]:
    pins = "\n".join(PINS)
    return {
        "pins_sha256": hashlib.sha256(pins.encode()).hexdigest(),
        "python": ".".join(map(str, sys.version_info[:2])),
        "mcp": MCP_VERSION,
        "langchain_mcp_adapters": ADAPTERS_VERSION,
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
    return out.returncode == 0 and out.stdout.split() == [MCP_VERSION, ADAPTERS_VERSION]


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise concurrent builders (e.g. xdist workers, or this script beside a pytest run)."""
    MCP1_HOME.mkdir(parents=True, exist_ok=True)
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


def _run(cmd: list[str], log: list[str], timeout: float) -> None:
    log.append("$ " + " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise Mcp1EnvError(f"command timed out after {timeout:.0f}s: {' '.join(cmd)}\n" + "\n".join(log)) from exc
    log.append(proc.stdout[-4000:])
    log.append(proc.stderr[-8000:])
    if proc.returncode != 0:
        raise Mcp1EnvError(
            f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n" + "\n".join(log)
        )


def _build(venv: Path) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    log: list[str] = []
    # sys._base_executable is the real interpreter when we run from inside a venv.
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    _run([base_python, "-m", "venv", str(venv)], log, timeout=300)
    req = venv / "perplexed-mcp1-requirements.txt"
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
        timeout=900,
    )
    (venv / STAMP_NAME).write_text(json.dumps(_stamp(), indent=2) + "\n")
    if not _venv_works(venv):
        raise Mcp1EnvError("mcp 1.x venv was built but its smoke import failed:\n" + "\n".join(log))


_verified: set[Path] = set()  # venvs already checked by this process


def ensure_venv(force: bool = False, venv: Path = VENV_DIR) -> Path:
    """Return the mcp 1.x venv directory, creating it first if it is missing or broken."""
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
    except Mcp1EnvError as exc:
        print(f"mcp1_env: {exc}", file=sys.stderr)
        return 1
    rel = os.path.relpath(venv_python(venv), Path.cwd())
    print(
        f"mcp1_env: mcp {MCP_VERSION} + langchain-mcp-adapters {ADAPTERS_VERSION} ready at {rel} "
        f"({time.monotonic() - t0:.1f}s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
