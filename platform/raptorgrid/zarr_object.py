"""Run publication on an S3-compatible object store (``s3://bucket/prefix`` Zarr roots).

Object stores have no rename, so the local store's stage-then-rename cannot publish a run
atomically. Instead each attempt writes its arrays under a fresh prefix
``run_<id>/attempt_<token>/`` (a complete Zarr group of its own), and the run is published by
writing the run's group document ``run_<id>/zarr.json`` with ``{"published": "attempt_<token>"}``
in its attributes: one PUT, which S3 makes visible whole or not at all. Readers resolve a run
through that document, so they see either nothing or one complete attempt; a crash before the
PUT leaves an unreferenced prefix, removed when a later attempt publishes. The worker commits
success in SQL only after publishing (as with the local store).

Connection settings are the standard AWS ones, read by s3fs/botocore from the environment
(``AWS_ENDPOINT_URL`` for a non-AWS server such as MinIO or moto, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``), so API, CLI and workers on any host find the
store from the same variables (``docs/platform.md``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import fsspec

SCHEMES = ("s3",)
"""Object-store URL schemes supported as Zarr roots."""
ATTEMPT_PREFIX = "attempt_"


def is_object_url(root: object) -> bool:
    return isinstance(root, str) and "://" in root


def check_url(url: str) -> str:
    """``url`` without a trailing slash; ValueError naming the problem when it is not a
    supported object-store URL."""
    scheme, _, rest = url.partition("://")
    if scheme not in SCHEMES:
        raise ValueError(
            f"zarr_root: scheme {scheme!r} is not supported; use a folder or s3://bucket/prefix"
        )
    if not rest.strip("/"):
        raise ValueError("zarr_root: the URL names no bucket (s3://bucket/prefix)")
    return url.rstrip("/")


def join(url: str, *parts: str) -> str:
    return "/".join([url.rstrip("/"), *parts])


def _fs_path(url: str):  # noqa: ANN202
    """(filesystem, path inside it) of ``url``: one parse."""
    return fsspec.core.url_to_fs(url)


def _group_document(attributes: dict) -> bytes:
    return json.dumps({"zarr_format": 3, "node_type": "group", "attributes": attributes}).encode()


class FileMirror:
    """Whole files under an object-store prefix (``models.executables.Mirror``): compiled
    executables and structure arrays shared by workers on hosts without a shared disk."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def fetch(self, name: str) -> bytes | None:
        try:
            fs, path = _fs_path(join(self.url, name))
            return fs.cat_file(path)
        except FileNotFoundError:
            return None

    def publish(self, name: str, data: bytes) -> None:
        fs, path = _fs_path(join(self.url, name))
        fs.pipe_file(path, data)


def check_reachable(url: str) -> None:
    """Raise unless the bucket of ``url`` can be listed."""
    fs, path = _fs_path(url)
    fs.ls(path.split("/", 1)[0], detail=False, refresh=True)


def ensure_group(url: str, attributes: dict) -> None:
    """Write the group document at ``url`` unless one exists."""
    fs, doc = _fs_path(join(url, "zarr.json"))
    if not fs.exists(doc):
        fs.pipe_file(doc, _group_document(attributes))


def attempt_url(store: str, group: str) -> str:
    """A fresh prefix for one write attempt of ``group`` in the campaign ``store``."""
    return join(store, group, f"{ATTEMPT_PREFIX}{uuid.uuid4().hex}")


def publish(store: str, group: str, attempt: str) -> None:
    """Make ``attempt`` (a complete group written under ``store/group``) the run's published
    data with one PUT, then remove the run's other attempts (best effort: a failure leaves
    unreferenced objects, never a wrong run)."""
    fs, run_prefix = _fs_path(join(store, group))
    name = attempt.rstrip("/").rsplit("/", 1)[1]
    fs.pipe_file(f"{run_prefix}/zarr.json", _group_document({"published": name}))
    for entry in fs.ls(run_prefix, detail=False, refresh=True):
        other = Path(entry).name
        if other.startswith(ATTEMPT_PREFIX) and other != name:
            fs.rm(entry, recursive=True)


def published_group(store: str, group: str) -> str:
    """The group path (relative to ``store``) of the run's published attempt;
    FileNotFoundError when the run was never published."""
    fs, doc = _fs_path(join(store, group, "zarr.json"))
    try:
        attributes = json.loads(fs.cat_file(doc)).get("attributes", {})
    except FileNotFoundError:
        raise FileNotFoundError(f"run group {group} is not stored in {store}") from None
    published = attributes.get("published")
    if not published:
        raise FileNotFoundError(f"run group {group} in {store} names no published attempt")
    return f"{group}/{published}"


def delete_tree(url: str) -> None:
    """Delete everything under ``url`` (a campaign store): the runs' published documents
    first, so a reader that races the deletion finds runs missing rather than half deleted."""
    fs, root = _fs_path(url)
    if not fs.exists(root):
        return
    for doc in fs.glob(f"{root}/*/zarr.json"):
        fs.rm_file(doc)
    fs.rm(root, recursive=True)
