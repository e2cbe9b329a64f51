"""Free space of the results store: a write refused for lack of space is an infrastructure
failure (``StoreFull``: retried, never a run's result), and ``/health`` compares the free
space with ``store_degraded_free_bytes`` and ``store_failing_free_bytes``."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Literal

from raptorgrid import zarr_object
from raptorgrid.settings import Settings

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""``OSError`` numbers meaning "no space left" (device full, quota exceeded)."""


class StoreFull(OSError):
    """The results store has no space left: the write is retried later; nothing is lost."""


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says the store is out of space."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, StoreFull) or (isinstance(seen, OSError) and seen.errno in FULL_ERRNOS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def free_bytes(zarr_root: Path | str) -> int | None:
    """Bytes free for the results folder; None for an object store (no such notion)."""
    if zarr_object.is_object_url(zarr_root):
        return None
    root = Path(zarr_root)
    while not root.exists() and root != root.parent:  # not created yet: its filesystem
        root = root.parent
    return shutil.disk_usage(root).free


def space_state(free: int | None, settings: Settings) -> Literal["ok", "degraded", "failing"]:
    """``failing`` below ``store_failing_free_bytes``, ``degraded`` below
    ``store_degraded_free_bytes``, else (or unknown) ``ok``."""
    if free is None:
        return "ok"
    if free < settings.store_failing_free_bytes:
        return "failing"
    if free < settings.store_degraded_free_bytes:
        return "degraded"
    return "ok"
