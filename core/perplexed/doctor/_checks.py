"""The doctor's pure checks, over plain data (tested as tables): a key's format (:func:`check_key_format`), a
response against its :class:`~perplexed.doctor.Shape` (:func:`check_shape`), and a reported cost against the
price table (:func:`reported_cost`, :func:`compare_cost`). Also the statuses every doctor row uses."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from perplexed.doctor._shapes import KEY_FORMATS, Shape

__all__ = ["ShapeCheck", "check_key_format", "check_shape", "compare_cost", "reported_cost"]

# --- statuses ------------------------------------------------------------------------------------------

OK, WARN, MISSING, ERROR, INFO = "ok", "warn", "missing", "error", "info"
DRIFT = "drift"
#: statuses of an offline check that fail ``perplexed doctor`` when the chain needs the thing checked
FAILING = frozenset({MISSING, ERROR})

_MIN_KEY_CHARS = 8


def check_key_format(provider: str, key: str | None) -> tuple[str, str]:
    """``(status, message)`` for a key's format: ``missing``, ``error`` (it cannot work as sent: blank,
    whitespace or quotes inside, a ``Bearer`` prefix, too short), ``warn`` (not the vendor's usual shape) or
    ``ok``. The message describes the key (length, expected shape), never its value."""
    if key is None or not key.strip():
        return MISSING, "no key"
    if key != key.strip():
        return ERROR, "the key has leading or trailing whitespace"
    if key[:1] in "\"'" or key[-1:] in "\"'":
        return ERROR, "the key is wrapped in quotes"
    if key.lower().startswith("bearer "):
        return ERROR, "the key starts with 'Bearer ' (set the key alone)"
    if any(c.isspace() for c in key):
        return ERROR, "the key contains whitespace"
    if not key.isascii() or not key.isprintable():
        return ERROR, "the key contains characters an HTTP header cannot carry"
    if len(key) < _MIN_KEY_CHARS:
        return ERROR, f"the key is only {len(key)} characters long"
    expected = KEY_FORMATS.get(provider)
    if expected is not None and re.fullmatch(expected[0], key) is None:
        return WARN, f"{len(key)} characters, not shaped like a {provider} key ({expected[1]})"
    return OK, f"set ({len(key)} characters)"


@dataclass(frozen=True)
class ShapeCheck:
    """What :func:`check_shape` found: ``missing`` fields (absent, or renamed), fields of the ``wrong_type``
    (``"path: got, expected"``), ``unknown`` new fields (not drift), and how many hits were looked at."""

    missing: tuple[str, ...] = ()
    wrong_type: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    items: int = 0

    @property
    def drift(self) -> bool:
        """Whether a field the parser relies on is missing, renamed or of another type."""
        return bool(self.missing or self.wrong_type)


_MISSING = object()


def _get(data: Any, path: str) -> Any:
    value = data
    for part in path.split(".") if path else ():
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


#: JSON type names by Python type, in the order tested (a bool is an int to Python)
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "bool"), (int, "int"), (float, "num"), (str, "str"), (list, "list"), (dict, "dict")
)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _type_ok(value: Any, types: str) -> bool:
    kind = _json_type(value)
    allowed = set(types.split("|"))
    return kind in allowed or (kind == "int" and "num" in allowed)


def _check_top(shape: Shape, data: dict[str, Any], missing: list[str], wrong: list[str]) -> None:
    """The response's own fields (``shape.top``)."""
    for spec in shape.top:
        value = _get(data, spec.path)
        if value is _MISSING:
            if spec.level != "optional":
                missing.append(spec.path)
        elif not _type_ok(value, spec.types):
            wrong.append(f"{spec.path}: {_json_type(value)}, expected {spec.types}")


def _check_items(shape: Shape, items: list[dict[str, Any]], missing: list[str], wrong: list[str]) -> None:
    """Each hit's fields (``shape.item``): required in every hit, expected in at least one, types always."""
    for spec in shape.item:
        name = f"{shape.items}[].{spec.path}"
        values = [v for i in items if (v := _get(i, spec.path)) is not _MISSING]
        if spec.level == "required" and len(values) < len(items):
            missing.append(f"{name} (in {len(items) - len(values)} of {len(items)} hits)")
        elif spec.level == "expected" and items and not values:
            missing.append(name)
        bad = next((v for v in values if not _type_ok(v, spec.types)), _MISSING)
        if bad is not _MISSING:
            wrong.append(f"{name}: {_json_type(bad)}, expected {spec.types}")


def _unknown_keys(shape: Shape, data: dict[str, Any]) -> tuple[str, ...]:
    """The keys outside ``shape.known`` (new fields, sorted)."""
    unknown: set[str] = set()
    for path, known in shape.known.items():
        if path.endswith("[]"):
            elements = _get(data, path[:-2])
            objects = [o for o in elements if isinstance(o, dict)] if isinstance(elements, list) else []
        else:
            obj = _get(data, path)
            objects = [obj] if isinstance(obj, dict) else []
        for obj in objects:
            unknown.update(f"{path}.{key}" if path else key for key in obj if key not in known)
    return tuple(sorted(unknown))


def check_shape(shape: Shape, data: Any) -> ShapeCheck:
    """Check a parsed JSON body against ``shape`` (pure)."""
    if not isinstance(data, dict):
        return ShapeCheck(missing=(f"(the body is a JSON {_json_type(data)}, not an object)",))
    missing: list[str] = []
    wrong: list[str] = []
    _check_top(shape, data, missing, wrong)
    listed = _get(data, shape.items)
    items = [i for i in listed if isinstance(i, dict)] if isinstance(listed, list) else []
    _check_items(shape, items, missing, wrong)
    return ShapeCheck(tuple(missing), tuple(wrong), _unknown_keys(shape, data), len(items))


def compare_cost(reported: float | None, table: float | None, *, tolerance: float = 0.01) -> tuple[str, str]:
    """``(status, note)``: ``drift`` when a reported cost differs from the price table by more than
    ``tolerance`` (relative; at least a hundredth of a cent), else ``ok``. Nothing to compare is ``ok``."""
    if reported is None and table is None:
        return OK, "no cost reported and no price table"
    if reported is None:
        return OK, f"not reported; price table ${table:.4f}"
    if table is None:
        return OK, f"reported ${reported:.4f} (no price table)"
    if abs(reported - table) <= max(1e-4, tolerance * table):
        return OK, f"reported ${reported:.4f} = price table ${table:.4f}"
    return DRIFT, f"reported ${reported:.4f}, price table ${table:.4f}"


def reported_cost(shape: Shape, data: Any, usd_per_credit: float | None = None) -> float | None:
    """The cost a response reports under ``shape.cost`` in USD (credits converted), or None."""
    if shape.cost is None:
        return None
    value = _get(data, shape.cost.path)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if shape.cost.unit == "credits":
        return None if usd_per_credit is None else float(value) * usd_per_credit
    return float(value)
