"""A compiled acceptance check for the shipped JSON schemas, in front of jsonschema.

jsonschema walks a document node by node and resolves every `$ref` as it goes: about 3 ms for a
run record with a panel of three judges, so 40 s of a 12,000-run `scylla report` went to
validating records that were all valid. fastjsonschema compiles a schema into Python code (0.15
ms a record). It only ever *accepts*: a document it refuses, or one holding a number that is not
finite (YAML's .inf, JSON's NaN, which the shipped schemas refuse through their own type
checker), goes to jsonschema, whose messages (path, line, what was expected) stay the only ones
users see. tests/unit/formats/test_fastcheck.py checks that the two never disagree on what they
accept.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from typing import Any

Check = Callable[[Any], Any]


def _inlined(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema with its local `#/$defs/NAME` references replaced by their definitions, and its
    `$id`/`$schema`/`$defs` dropped (fastjsonschema would resolve `$id` against the network);
    None when a definition refers to itself (no finite inlining) or a reference is not local."""
    defs = schema.get("$defs", {})

    def inline(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if ref is None:
            return {k: inline(v, seen) for k, v in node.items()}
        name = ref.removeprefix("#/$defs/")
        if len(node) != 1 or name == ref or name in seen or name not in defs:
            raise LookupError(ref)
        return inline(copy.deepcopy(defs[name]), (*seen, name))

    top = {k: v for k, v in schema.items() if k not in ("$id", "$schema", "$defs")}
    try:
        inlined: dict[str, Any] = inline(top, ())
    except LookupError:
        return None
    return inlined


@cache
def compiled(schema_json: str) -> Check | None:
    """The compiled check of a schema (given as its JSON text, so it can be cached), or None when
    it cannot be compiled faithfully (then jsonschema alone decides)."""
    import fastjsonschema

    inlined = _inlined(json.loads(schema_json))
    if inlined is None:
        return None
    # formats are annotations for jsonschema (no format checker): fastjsonschema would check
    # them; and it would fill in the schema's defaults, changing the data it checks
    check: Check = fastjsonschema.compile(inlined, use_default=False, use_formats=False)
    return check


def accepts(check: Check | None, data: Any) -> bool:
    """True when the compiled check accepts `data` and every number in it is finite (plain JSON
    data only: anything else, e.g. a date YAML parsed, is left to jsonschema)."""
    if check is None:
        return False
    try:
        json.dumps(data, allow_nan=False)  # C-speed walk: refuses NaN/inf and non-JSON values
        check(data)
    except (ValueError, TypeError, RecursionError):  # JsonSchemaException is a ValueError
        return False
    return True
