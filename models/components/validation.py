"""Checks of dynamic device data: every field present, a finite number, and physically sensible.

Each failure raises ``ValueError`` naming the device and the field, e.g.
``generator at bus 2 (gen2): machine field 'H' must be > 0, got -1.0``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

Rule = tuple[str, Callable[[float], bool], str]
"""(field, predicate, description of the requirement)."""


def positive(v: float) -> bool:
    return v > 0.0


def non_negative(v: float) -> bool:
    return v >= 0.0


def any_finite(v: float) -> bool:
    return True


def number(device: str, data: Mapping, field: str) -> float:
    """``data[field]`` as a finite float; missing, non-numeric or non-finite values raise."""
    if field not in data:
        raise ValueError(f"{device}: field {field!r} is missing")
    value = data[field]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{device}: field {field!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{device}: field {field!r} must be finite, got {value!r}")
    return value


def check_fields(device: str, data: Mapping, rules: tuple[Rule, ...]) -> dict[str, float]:
    """Apply ``rules`` to ``data``; the validated fields as floats."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{device}: expected a mapping of fields, got {type(data).__name__}")
    out = {}
    for field, predicate, requirement in rules:
        value = number(device, data, field)
        if not predicate(value):
            raise ValueError(f"{device}: field {field!r} must be {requirement}, got {value!r}")
        out[field] = value
    return out
