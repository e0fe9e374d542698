"""Issue 35: pydantic's plugin scan is spared only when it could find nothing; a user's plugin is still found,
loaded and called. The check reads what importlib.metadata reads, and agrees with it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from perplexed._plugin_scan import declares_pydantic_plugins  # private: the check the cold start relies on

ROOT = Path(__file__).resolve().parents[1]


def importlib_finds_one() -> bool:
    return bool(list(importlib.metadata.entry_points(group="pydantic")))


def test_the_check_agrees_with_importlib_metadata_in_this_environment() -> None:
    assert declares_pydantic_plugins() == importlib_finds_one()


@pytest.mark.parametrize(
    ("folder", "entry_points", "declares"),
    [
        ("fakeplug-1.0.dist-info", "[pydantic]\nfake = fakeplug:plugin\n", True),
        ("FakePlug-1.0.DIST-INFO", "  [pydantic]  \nfake = fakeplug:plugin\n", True),
        ("fakeplug-1.0.egg-info", "[console_scripts]\nfake = fakeplug:main\n\n[pydantic]\nfake = fakeplug:plugin\n", True),
        ("fakeplug-1.0.dist-info", "[[pydantic]]\nfake = fakeplug:plugin\n", True),
        ("fakeplug-1.0.dist-info", "[console_scripts]\npydantic = fakeplug:main\n", False),
        ("fakeplug-1.0.dist-info", "[pydantic.v1]\nfake = fakeplug:plugin\n", False),
        ("fakeplug-1.0.dist-info", "# [pydantic]\n", False),
        ("fakeplug-1.0.dist", "[pydantic]\nfake = fakeplug:plugin\n", False),  # not a distribution's folder
    ],
)
def test_a_distribution_on_sys_path_is_read_as_importlib_metadata_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, entry_points: str, declares: bool
) -> None:
    if importlib_finds_one():
        pytest.skip("this environment has a pydantic plugin installed")
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (tmp_path / folder / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert declares_pydantic_plugins() is declares
    assert importlib_finds_one() is declares


def test_a_zip_on_sys_path_or_another_finder_means_unknown_so_pydantic_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "packages.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip file
    monkeypatch.syspath_prepend(str(archive))
    assert declares_pydantic_plugins() is True
    monkeypatch.syspath_prepend(str(tmp_path / "missing"))  # a missing folder: nothing to read, nothing unknown
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(archive)])
    assert declares_pydantic_plugins() is importlib_finds_one()

    class Finder:
        @staticmethod
        def find_distributions(context: object = None) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    assert declares_pydantic_plugins() is True


def run(code: str, path: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PERPLEXED_", "PYDANTIC_"))}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**clean, "PYTHONPATH": os.pathsep.join([*path, str(ROOT / "core")]), **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_an_installed_plugin_is_still_loaded_and_called_for_perplexed_models(tmp_path: Path) -> None:
    (tmp_path / "fakeplug.py").write_text(textwrap.dedent(
        """
        seen = []

        class Plugin:
            def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, settings):
                seen.append(getattr(schema_type, "__name__", str(schema_type)))
                return None, None, None

        plugin = Plugin()
        """))
    dist = tmp_path / "fakeplug-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pydantic]\nfake = fakeplug:plugin\n")
    result = run(
        """
        import json, perplexed, fakeplug
        hit = perplexed.Hit(id=1, url="https://a.example/", title="A")
        print(json.dumps({"seen": fakeplug.seen}))
        """, [str(tmp_path)])
    assert "Hit" in result["seen"] and "Result" in result["seen"], result  # type: ignore[operator]


def test_without_plugins_the_scan_is_spared_and_the_answer_is_pydantics() -> None:
    if importlib_finds_one():
        pytest.skip("this environment has a pydantic plugin installed")
    code = """
        import importlib.metadata, json
        scanned = []
        real = importlib.metadata.distributions
        importlib.metadata.distributions = lambda *a, **k: scanned.append(1) or real(*a, **k)
        import perplexed._models
        from pydantic.plugin import _loader
        print(json.dumps({"scanned": len(scanned), "plugins": list(_loader.get_plugins())}))
    """
    assert run(code, []) == {"scanned": 0, "plugins": []}
    # PYDANTIC_DISABLE_PLUGINS is pydantic's: nothing is done, pydantic answers itself
    assert run(code, [], env={"PYDANTIC_DISABLE_PLUGINS": "some_plugin"}) == {"scanned": 1, "plugins": []}
