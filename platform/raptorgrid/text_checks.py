"""Strings a database and a JSON encoder can take: no NUL (PostgreSQL refuses it in text) and
no lone surrogate (no UTF-8 encoder takes one). One job: say what is wrong with a string."""

from __future__ import annotations

from typing import Any

Loc = tuple[str | int, ...]


def invalid_text(text: str) -> str | None:
    """Why ``text`` is refused (a message naming the character), or None when it is fine."""
    if "\x00" in text:
        return f"contains a NUL character (U+0000) at position {text.index(chr(0))}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"contains a lone surrogate (U+{ord(text[exc.start]):04X}) at position {exc.start}: "
            "not valid Unicode text"
        )
    return None


def find_invalid_text(document: Any) -> tuple[Loc, str] | None:
    """(location, reason) of the first refused string (a key or a value) in a JSON document, or
    None; an explicit stack, so no recursion however deep the document is."""
    stack: list[tuple[Any, Loc]] = [(document, ())]
    while stack:
        value, loc = stack.pop()
        if isinstance(value, str):
            reason = invalid_text(value)
            if reason is not None:
                return loc, reason
        elif isinstance(value, dict):
            for key, item in value.items():
                reason = invalid_text(key) if isinstance(key, str) else None
                if reason is not None:
                    return (*loc, _escaped(key)), f"the key {reason}"
                stack.append((item, (*loc, key)))
        elif isinstance(value, list):
            stack.extend((item, (*loc, i)) for i, item in enumerate(value))
    return None


def _escaped(text: str) -> str:
    """``text`` with refused characters written as escapes, so that it can be echoed."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
