"""Submitting a campaign: expand the spec, store it in one transaction, then enqueue its runs
(after the commit, so a worker never receives a run id it cannot read). Used by the API and the
CLI alike."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from celery import Celery

from raptorgrid import repository as repo
from raptorgrid.db import Database
from raptorgrid.queueing import enqueue_runs
from raptorgrid.settings import Settings
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import ensure_campaign_store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submitted:
    campaign_id: int
    n_scenarios: int
    n_runs: int


def submit_campaign(
    *,
    db: Database,
    celery: Celery,
    settings: Settings,
    spec: CampaignCreate,
    raw_spec: dict[str, Any] | None = None,
) -> Submitted:
    """Store ``spec`` and enqueue its runs; raises ``spec.SpecError`` for a refused spec."""
    expansion = expand(spec, settings=settings)
    with db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expansion, now=utcnow(), raw_spec=raw_spec
        )
    ensure_campaign_store(settings.zarr_root, campaign.id)
    enqueue_runs(celery, run_ids, queue=settings.queue)
    log.info("campaign %d: %d runs submitted", campaign.id, len(run_ids))
    return Submitted(campaign.id, len(expansion.scenarios), len(run_ids))
