"""docs/errors.md's exception tree is the one perplexed._errors defines (issue 18: every exception class lives
in _errors.py, and the docs list the tree), and no other module of perplexed defines an exception class."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import perplexed
from perplexed import _errors  # private: the docs' tree against the defining module

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(perplexed.__file__).resolve().parent


def _summary(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _classes() -> list[type]:
    return [
        obj
        for name, obj in vars(_errors).items()
        if isinstance(obj, type) and issubclass(obj, _errors.PerplexedError) and not name.startswith("_")
    ]


def render_tree() -> str:
    """The tree as docs/errors.md shows it: children sorted by name; a class with two perplexed bases is
    listed in full under its first and as ``(see First)`` under the other; other bases are ``(also X)``."""
    classes = _classes()
    lines: list[str] = []

    def walk(cls: type, depth: int) -> None:
        for child in sorted((c for c in classes if cls in c.__bases__), key=lambda c: c.__name__):
            ours = [b for b in child.__bases__ if issubclass(b, _errors.PerplexedError)]
            pad = "    " * depth
            if ours[0] is not cls:
                lines.append(f"{pad}{child.__name__} (see {ours[0].__name__})")
                continue
            others = [b.__name__ for b in child.__bases__ if not issubclass(b, _errors.PerplexedError)]
            also = f" (also {', '.join(others)})" if others else ""
            lines.append(f"{pad}{child.__name__}{also}: {_summary(child)}")
            walk(child, depth + 1)

    lines.append(f"PerplexedError: {_summary(_errors.PerplexedError)}")
    walk(_errors.PerplexedError, 1)
    return "\n".join(lines)


def test_the_docs_tree_is_the_code_tree() -> None:
    text = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    block = text.split("<!-- error-tree -->", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert block.rstrip("\n") == render_tree(), "regenerate: python tests/test_error_tree.py"


def test_every_class_in_the_module_docstring_tree() -> None:
    tree = (_errors.__doc__ or "").split("::", 1)[1]
    drawn = {line.strip(" │├└─").split(" ", 1)[0] for line in tree.splitlines() if line.strip()}
    assert {cls.__name__ for cls in _classes()} <= drawn




def test_no_exception_class_is_defined_outside_errors() -> None:
    """Private helpers (a name starting with ``_``) may subclass Exception for internal control flow."""
    strays = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {ast.unparse(b) for b in node.bases}
                if any(b.endswith(("Error", "Exception")) for b in bases):
                    strays.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert sorted(strays) == []


if __name__ == "__main__":
    print(render_tree())
