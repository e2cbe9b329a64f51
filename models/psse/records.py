"""Tokens of PSS(R)E records and the one error type of the PSS/E readers.

A record is a line of fields separated by commas or blanks; text fields are quoted with single
(or double) quotes; ``/`` outside quotes starts a comment; two commas in a row leave a field to its
default (PSS/E program operation manual, "Power Flow Raw Data File Contents"). Tokens keep their
text; ``None`` marks a defaulted (empty) field.
"""

from __future__ import annotations

import math


class PsseError(ValueError):
    """A refused PSS/E file: ``file``, 1-based ``line`` (0: the whole file), the ``record`` kind
    and what is wrong with it."""

    def __init__(self, file: str, line: int, record: str, message: str) -> None:
        self.file, self.line, self.record, self.message = file, line, record, message
        where = f"{file}, line {line}" if line else file
        super().__init__(f"{where} ({record}): {message}")


def split_record(text: str) -> list[str | None]:
    """Fields of one record line (see the module docstring); quotes are removed, text kept."""
    fields: list[str | None] = []
    token: list[str] = []
    quote = ""
    pending = False  # a token (possibly empty quoted text) has started
    after_comma = True  # a comma with nothing since: the next comma leaves a default
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            else:
                token.append(ch)
            continue
        if ch in "'\"":
            quote, pending = ch, True
        elif ch == "/":
            break
        elif ch == ",":
            if pending:
                fields.append("".join(token))
            elif after_comma:
                fields.append(None)
            token, pending, after_comma = [], False, True
        elif ch in " \t\r\n":
            if pending:
                fields.append("".join(token))
                token, pending, after_comma = [], False, False
        else:
            token.append(ch)
            pending = True
    if quote:
        raise ValueError("a quoted text is not closed")
    if pending:
        fields.append("".join(token))
    return fields


def data_part(text: str) -> str:
    """The line before its ``/`` comment (quotes respected)."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "/":
            return text[:i]
    return text


class Fields:
    """Named access to the fields of one record, with errors naming file, line and field."""

    def __init__(self, file: str, line: int, record: str, names: tuple[str, ...], values):
        self.file, self.line, self.record = file, line, record
        self.values = dict(zip(names, values, strict=False))
        self.names = names

    def error(self, message: str) -> PsseError:
        return PsseError(self.file, self.line, self.record, message)

    def _raw(self, name: str, default):
        value = self.values.get(name)
        if value is None or value == "":
            if default is _REQUIRED:
                raise self.error(f"field {name} is missing")
            return None
        return value

    def number(self, name: str, default: float | object = None) -> float:
        """Field ``name`` as a finite float; ``default`` (PSS/E's documented value) when the
        field is omitted or defaulted; omitted without a default is an error."""
        value = self._raw(name, _REQUIRED if default is None else default)
        if value is None:
            return float(default)  # type: ignore[arg-type]
        try:
            out = float(value)
        except ValueError:
            raise self.error(f"field {name} = {value!r} is not a number") from None
        if not math.isfinite(out):
            raise self.error(f"field {name} = {value!r} is not finite")
        return out

    def integer(self, name: str, default: int | object = None) -> int:
        out = self.number(name, default)
        if out != int(out):
            raise self.error(f"field {name} = {out!r} is not an integer")
        return int(out)

    def text(self, name: str, default: str = "") -> str:
        value = self.values.get(name)
        return default if value is None else value.strip()


_REQUIRED = object()
