"""Messages for unknown names (networks, methods, elements, options): what was asked, the
closest valid names ("did you mean"), and the valid ones, so a typo is fixed in one look."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

PLURALS = {"bus": "buses", "branch": "branches"}


def plural(kind: str) -> str:
    return PLURALS.get(kind, f"{kind}s")


def closest(name: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` valid names close to ``name`` (difflib ratio >= 0.6), best first."""
    return difflib.get_close_matches(str(name), [str(v) for v in valid], n=n, cutoff=0.6)


def unknown_name(kind: str, name: object, valid: Iterable[str], where: str = "") -> str:
    """``unknown <kind> '<name>'[ in <where>] (did you mean ...?); valid <kinds>: [...]``."""
    valid = list(valid)
    near = closest(str(name), valid)
    hint = f" (did you mean {' or '.join(repr(v) for v in near)}?)" if near else ""
    place = f" in {where}" if where else ""
    return f"unknown {kind} {name!r}{place}{hint}; valid {plural(kind)}: {valid}"
