"""The JSON-Schema subset strict tool callers accept (OpenAI strict mode, Gemini function declarations), as a
check: :func:`portability_problems` lists what a tool's input schema does that some callers reject.

- every property is typed with one JSON type (``"type": "string"``, not a list, not an ``anyOf`` arm);
- no ``anyOf``/``oneOf``/``allOf`` of something and ``null`` (an optional field with a default will do:
  leave it out of ``required``), no ``null`` type;
- objects say ``additionalProperties: false``; arrays type their ``items``;
- no ``$ref`` (some gateways do not resolve references);
- enum values match the declared type.
"""

from __future__ import annotations

from typing import Any

JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list,
              "object": dict}


def portability_problems(schema: dict[str, Any], path: str = "$") -> list[str]:
    problems: list[str] = []
    for key in ("anyOf", "oneOf", "allOf", "$ref"):
        if key in schema:
            problems.append(f"{path}: uses {key}")
    kind = schema.get("type")
    if not isinstance(kind, str):
        problems.append(f"{path}: not typed with one JSON type (type={kind!r})")
        return problems
    if kind not in JSON_TYPES:
        problems.append(f"{path}: type {kind!r} is not portable")
        return problems
    if "enum" in schema:
        for value in schema["enum"]:
            if not isinstance(value, JSON_TYPES[kind]) or isinstance(value, bool) != (kind == "boolean"):
                problems.append(f"{path}: enum value {value!r} is not a {kind}")
    if kind == "object":
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: object without additionalProperties: false")
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in properties:
                problems.append(f"{path}: requires {name!r}, which is not a property")
        for name, sub in properties.items():
            problems.extend(portability_problems(sub, f"{path}.{name}"))
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            problems.append(f"{path}: array without typed items")
        else:
            problems.extend(portability_problems(items, f"{path}[]"))
    return problems
