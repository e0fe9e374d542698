"""Tool input schemas in the JSON-Schema subset strict tool callers accept (OpenAI strict mode, Gemini function
declarations, model gateways that reject ``anyOf`` with ``null``). Pure: a dict in, the same dict rewritten."""

from __future__ import annotations

from typing import Any

__all__ = ["portable_schema"]

_DROPPED = ("title",)


def portable_schema(schema: dict[str, Any], *_: Any) -> dict[str, Any]:
    """Rewrite a JSON schema (in place, and return it) so strict tool callers accept it.

    - an optional field written ``X | None`` (``anyOf: [X, {"type": "null"}]`` or ``"type": [X, "null"]``)
      becomes plain ``X``: it stays optional by being left out of ``required``, and a ``null`` default is
      dropped;
    - local ``$ref``s into ``$defs`` are inlined and ``$defs`` removed;
    - objects get ``additionalProperties: false``; ``title`` keys go.

    Usable as a pydantic model's ``json_schema_extra`` (it accepts and ignores the model class).
    """
    defs: dict[str, Any] = dict(schema.get("$defs") or {})
    schema.pop("$defs", None)
    rewritten = _rewrite(schema, defs, 0)
    schema.clear()
    schema.update(rewritten)
    return schema


def _rewrite(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if depth > 32:  # a recursive model: leave the rest as it is
        return node
    if isinstance(node, list):
        return [_rewrite(item, defs, depth + 1) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[len("#/$defs/"):] in defs:
        target = dict(defs[ref[len("#/$defs/"):]])
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _rewrite(merged, defs, depth + 1)
    out = {k: v for k, v in node.items() if k not in _DROPPED}
    for key in ("anyOf", "oneOf"):
        arms = out.get(key)
        if isinstance(arms, list):
            kept = [arm for arm in arms if not (isinstance(arm, dict) and arm.get("type") == "null")]
            if len(kept) < len(arms) and len(kept) == 1 and isinstance(kept[0], dict):
                del out[key]
                out = {**kept[0], **out}
                if out.get("default", 0) is None:
                    del out["default"]
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        if len(rest) == 1:
            out["type"] = rest[0]
            if out.get("default", 0) is None:
                del out["default"]
            if isinstance(out.get("enum"), list):
                out["enum"] = [v for v in out["enum"] if v is not None]
    if out.get("type") == "object":
        out["additionalProperties"] = False
    for key, value in list(out.items()):
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _rewrite(sub, defs, depth + 1) for name, sub in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties") and isinstance(value, dict | list):
            out[key] = _rewrite(value, defs, depth + 1)
    return out
