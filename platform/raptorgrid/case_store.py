"""Uploaded PSS/E cases as networks of campaigns: ``case:<id>`` names the stored case ``id``.

``install()`` (done on import) gives ``models.library.build_system`` the builder below, which
reads the stored raw/dyr pair from the database of the process's settings and assembles it
(``models.psse.case``); the API, the CLI and the workers all import this module, so a campaign
submitted anywhere is built the same way everywhere. Stored cases never change, so the per-process
cache of ``build_system`` stays valid.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from models.dae import DAESystem
from models.library import STORED_CASE_PREFIX, set_stored_case_builder
from raptorgrid.cases import CaseFormat


def case_network(case_id: int) -> str:
    """The network name campaigns use for stored case ``case_id``."""
    return f"{STORED_CASE_PREFIX}{case_id}"


MAX_CASE_ID = 2**31 - 1
"""Largest row id (a 32-bit SQL integer)."""


def stored_case_id(name: str) -> int:
    """The id of ``case:<id>``; ``KeyError`` unless it is an id in 1..MAX_CASE_ID."""
    text = name[len(STORED_CASE_PREFIX) :]
    if not (text.isascii() and text.isdigit()):
        raise KeyError(f"network {name!r}: an uploaded case is named case:<id>, e.g. case:1")
    if not 1 <= int(text) <= MAX_CASE_ID:
        raise KeyError(f"network {name!r}: a case id is between 1 and {MAX_CASE_ID}")
    return int(text)


def psse_options(document: dict[str, Any]) -> dict[str, Any]:
    """``models.psse.case.load_psse_case`` options of a stored PSS/E document."""
    options: dict[str, Any] = {
        "raw_file": document.get("raw_file", "case.raw"),
        "dyr_file": document.get("dyr_file", "case.dyr"),
        "substitute": bool(document.get("substitute", False)),
        "strict": bool(document.get("strict", False)),
    }
    if document.get("load_conversion") is not None:
        options["load_conversion"] = tuple(document["load_conversion"])
    return options


_settings = None
"""The settings whose database holds the cases (``use_settings``); the environment's by default."""


def use_settings(settings) -> None:  # noqa: ANN001 - raptorgrid.settings.Settings
    """Read cases from the database of ``settings`` (the API app and the workers call this with
    their own settings)."""
    global _settings
    _settings = settings


def build_stored_case(name: str) -> DAESystem:
    """The DAE of the uploaded case ``name`` (``case:<id>``), built once per (database, id);
    ``KeyError`` when there is none or it is not a PSS/E case."""
    from raptorgrid.settings import get_settings

    settings = _settings or get_settings()
    key = (str(settings.database_url), stored_case_id(name))
    with _LOCK:
        if key not in _BUILT:
            if len(_BUILT) >= MAX_BUILT:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[key] = _build(settings, key[1])
        return _BUILT[key]


MAX_BUILT = 16
"""Built stored cases kept per process (oldest dropped first)."""
_BUILT: dict[tuple[str, int], DAESystem] = {}
_LOCK = threading.Lock()


def _build(settings, case_id: int) -> DAESystem:  # noqa: ANN001
    from models.psse.case import build_psse_case
    from raptorgrid.db import Database
    from raptorgrid.tables import CaseFile

    name = case_network(case_id)
    db = Database.from_settings(settings)
    try:
        with db.read() as session:
            row = session.get(CaseFile, case_id)
            found = None if row is None else (row.format, row.content)
    finally:
        db.dispose()
    if found is None:
        raise KeyError(f"network {name!r}: no uploaded case {case_id}")
    fmt, content = found
    if fmt != CaseFormat.PSSE:
        raise KeyError(
            f"network {name!r}: case {case_id} is a {fmt} file; campaigns run on uploaded PSS/E "
            "cases (format psse)"
        )
    document = json.loads(content)
    return build_psse_case(document["raw"], document["dyr"], name, **psse_options(document))


def install() -> None:
    set_stored_case_builder(build_stored_case)


install()


def store_case(  # noqa: ANN201
    db,  # noqa: ANN001
    *,
    name: str,
    fmt: CaseFormat,
    data: bytes,
    owner: str | None,
    summary: dict[str, Any] | None = None,
):
    """Validate ``data`` as ``fmt`` (``raptorgrid.cases.parse_case``: raises ``CaseError``)
    unless its ``summary`` is given (checked already, as the API does in a bounded process), and
    store it with its summary; returns the stored row (detached). Nothing is stored on error."""
    import hashlib

    from raptorgrid.cases import parse_case
    from raptorgrid.tables import CaseFile, utcnow

    if summary is None:
        summary = parse_case(data, fmt)
    with db.write() as session:
        row = CaseFile(
            name=name,
            format=fmt.value,
            sha256=hashlib.sha256(data).hexdigest(),
            size_bytes=len(data),
            content=data.decode("utf-8"),
            summary=summary,
            owner=owner,
            created_at=utcnow(),
            shared=False,
        )
        session.add(row)
        session.flush()
        return row
