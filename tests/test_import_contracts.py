"""The import contracts in ``.importlinter`` hold: ``perplexed``'s layers import only downward, sibling modules
form no cycles, the core imports no framework. CI runs ``lint-imports`` too; this runs it with the suite so a
change that breaks the structure fails where its author looks first."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "lint-imports is installed by the test extra (import-linter)"
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " 0 broken." in proc.stdout


def test_no_module_of_perplexed_is_part_of_an_import_cycle() -> None:
    """Stricter than acyclic_siblings, which squashes packages: no cycle through any two modules, a package's
    ``__init__`` included (a helper importing its own package lazily is a cycle too)."""
    import grimp

    graph = grimp.build_graph("perplexed", cache_dir=None)
    cycles = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycles.add(" -> ".join((importer, *back)))
    assert not cycles, "import cycles: " + "; ".join(sorted(cycles))
