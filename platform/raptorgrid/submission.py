"""Submitting a campaign: expand the spec, store it in one transaction, then enqueue its runs
(after the commit, so a worker never receives a run id it cannot read). Used by the API and the
CLI alike.

With an idempotency key (the API's ``Idempotency-Key`` header) a retried submission returns the
campaign the first one created; the same key with a different spec is refused. If the broker is
down after the commit, the runs stay queued in SQL and the reconciler sends them later.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError as BrokerUnavailable
from sqlalchemy.exc import IntegrityError

from models.library import stored_sizes
from raptorgrid import repository as repo
from raptorgrid.batching import RunToSend, batch_size, batches, expected_run_seconds
from raptorgrid.db import Database
from raptorgrid.queueing import enqueue_runs
from raptorgrid.settings import Settings
from raptorgrid.spec import CampaignCreate, Expansion, expand
from raptorgrid.store_space import StoreFull, is_full
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import ensure_campaign_store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submitted:
    campaign_id: int
    n_scenarios: int
    n_runs: int
    replayed: bool = False
    """True when an earlier submission with the same idempotency key is returned."""


class IdempotencyConflict(ValueError):
    """The idempotency key was already used with a different spec."""


def spec_hash(raw_spec: dict[str, Any]) -> str:
    """sha256 of the spec as canonical JSON (key order does not matter)."""
    canonical = json.dumps(raw_spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _replay(db: Database, owner: str, key: str, request_hash: str) -> Submitted | None:
    with db.read() as session:
        found = repo.find_by_idempotency_key(session=session, owner=owner, key=key)
    if found is None:
        return None
    if found.request_hash != request_hash:
        raise IdempotencyConflict(
            f"Idempotency-Key {key!r} was already used for campaign {found.id} with a different "
            "request body; send a new key to submit a different campaign"
        )
    return Submitted(found.id, found.n_scenarios, found.n_runs, replayed=True)


def _batches(
    db: Database,
    settings: Settings,
    spec: CampaignCreate,
    expansion: Expansion,
    run_ids: list[int],
) -> list[list[int]]:
    """The campaign's runs in messages (``raptorgrid.batching``), sized per method from the
    measured solve times of earlier runs on the network, else from its size."""
    runs = [
        RunToSend(run_id, (r.method, r.config_label))
        for run_id, r in zip(run_ids, expansion.runs, strict=True)
    ]
    if settings.max_batch_size == 1:
        return [[r.run_id] for r in runs]
    methods = sorted({r.config[0] for r in runs})
    with db.read() as session:
        measured = repo.recent_solve_seconds(session=session, network=spec.network, methods=methods)
    meta = stored_sizes(spec.network) or {}
    n_unknowns = int(meta.get("n_x", 0)) + int(meta.get("n_z", 0))
    out: list[list[int]] = []
    for method in methods:
        mine = [r for r in runs if r.config[0] == method]
        expected = expected_run_seconds(
            n_unknowns=n_unknowns, t_end=spec.t_end, measured_median=measured.get(method)
        )
        size = batch_size(expected_seconds=expected, n_runs=len(mine), settings=settings)
        out.extend(batches(mine, size))
    return out


def _prepare_store(settings: Settings, campaign_id: int) -> None:
    """The campaign's results group, created now; ``StoreFull`` when there is no space."""
    try:
        ensure_campaign_store(settings.zarr_root, campaign_id)
    except OSError as exc:
        if is_full(exc):
            raise StoreFull(exc.errno, f"the results store is full ({exc.strerror})") from exc
        raise


def submit_campaign(
    *,
    db: Database,
    celery: Celery,
    settings: Settings,
    spec: CampaignCreate,
    raw_spec: dict[str, Any] | None = None,
    owner: str | None = None,
    idempotency_key: str | None = None,
) -> Submitted:
    """Store ``spec`` and enqueue its runs; raises ``spec.SpecError`` for a refused spec and
    ``IdempotencyConflict`` for a key reused with another spec (keys need an ``owner``)."""
    if idempotency_key is not None and owner is None:
        raise ValueError("an idempotency key needs an owner")
    raw = raw_spec if raw_spec is not None else spec.model_dump(mode="json")
    request_hash = spec_hash(raw) if idempotency_key is not None else None
    if idempotency_key is not None:
        replay = _replay(db, owner, idempotency_key, request_hash)
        if replay is not None:
            return replay
    expansion = expand(spec, settings=settings)
    try:
        with db.write() as session:
            campaign, run_ids = repo.create_campaign(
                session=session,
                spec=spec,
                expansion=expansion,
                now=utcnow(),
                raw_spec=raw_spec,
                owner=owner,
                idempotency_key=idempotency_key,
                request_hash=request_hash,
            )
            # before the commit: a store that cannot take the campaign (full, unwritable) fails
            # the request with nothing stored, never after the campaign exists
            _prepare_store(settings, campaign.id)
    except IntegrityError:
        # A concurrent request with the same key committed first: answer with its campaign.
        replay = _replay(db, owner, idempotency_key, request_hash) if idempotency_key else None
        if replay is None:
            raise
        return replay
    try:
        enqueue_runs(
            celery,
            run_ids,
            queue=settings.queue,
            batches=_batches(db, settings, spec, expansion, run_ids),
            time_limits=(settings.soft_time_limit, settings.hard_time_limit),
        )
    except BrokerUnavailable as exc:
        log.warning(
            "campaign %d stored but the broker is unreachable (%s): its %d runs stay queued and "
            "the reconciler sends them",
            campaign.id,
            exc,
            len(run_ids),
        )
    log.info("campaign %d: %d runs submitted", campaign.id, len(run_ids))
    return Submitted(campaign.id, len(expansion.scenarios), len(run_ids))
