"""Server details out of text shown to non-admins: file-system paths become ``<path>``.

A run's message may quote an exception (``FileNotFoundError: ... '/srv/data/...'``); the row and
the logs keep it whole, the API shows it to non-admins without the path (docs/security.md).
"""

from __future__ import annotations

import re

PATH_MARK = "<path>"
_NAME = r"[^\s/\\'\"(),;]"
_PATH = re.compile(
    rf"(?<![\w.])(?:~|\.\.?)?/(?:{_NAME}+/)+{_NAME}*"  # /a/b, ~/a/b, ./a/b (two parts or more)
    rf"|(?<![\w.])[A-Za-z]:\\(?:{_NAME}+\\)*{_NAME}*"  # C:\a\b
)


def without_paths(text: str) -> str:
    """``text`` with every absolute or home-relative path of two parts or more replaced."""
    return _PATH.sub(PATH_MARK, text)
