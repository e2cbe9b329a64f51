"""The error a refused campaign spec raises, in a module of its own so that the CLI and the API
can catch it without importing the spec module (which imports the model library and JAX)."""

from __future__ import annotations

Loc = tuple[str | int, ...]
"""Where in the spec a problem is: field names and list indices, outermost first."""


class SpecError(ValueError):
    """Spec errors found after parsing, each ``(loc, message)`` with ``loc`` inside the spec."""

    def __init__(self, errors: list[tuple[Loc, str]]) -> None:
        self.errors = errors
        super().__init__(
            "; ".join(f"{'.'.join(map(str, loc)) or 'spec'}: {m}" for loc, m in errors)
        )
