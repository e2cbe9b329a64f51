"""The consistency check behind ``raptorgrid check``: the repository's invariants
(``repository.consistency``) and, for every succeeded run, that its one result is readable.

A succeeded run has exactly one result: its group is the run's own (``run_group_path``), it
opens (``zarr_store.open_run``, a block's slice included) and, where the group records a run id,
it is this run's. Runs are read in pages; each result is opened lazily (metadata only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from raptorgrid.repository import consistency as queries
from raptorgrid.repository.consistency import Finding
from raptorgrid.zarr_store import ZarrRoot, open_run, run_group_path

MAX_LISTED = 100
"""Findings of one kind listed at most (a query stops there; the report says so)."""


@dataclass
class Report:
    """What the check looked at and what it found (empty ``findings``: consistent)."""

    campaign_id: int | None
    results_read: int = 0
    findings: list[Finding] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    """Kinds with more findings than ``MAX_LISTED`` (only the first are listed)."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "campaign_id": self.campaign_id,
            "results_read": self.results_read,
            "findings": [f.__dict__ for f in self.findings],
            "truncated": self.truncated,
        }


def result_problem(zarr_root: ZarrRoot, campaign_id: int, run_id: int, group: str) -> str | None:
    """Why the succeeded run's result is not its one readable result, or None when it is."""
    expected = run_group_path(campaign_id, run_id)
    if group != expected:
        return f"its result is {group!r}, not its own {expected!r}"
    try:
        dataset = open_run(zarr_root, campaign_id, run_id)
    except Exception as exc:  # any reader error is the finding, reported by its type
        return f"its result cannot be read ({type(exc).__name__}: {exc})"
    recorded = dataset.attrs.get("run_id")
    if recorded is not None and int(recorded) != run_id:
        return f"its result holds run {recorded}"
    return None


def check(
    *,
    session: Session,
    zarr_root: ZarrRoot,
    now: datetime,
    stale: timedelta,
    campaign_id: int | None = None,
    read_results: bool = True,
) -> Report:
    """Every invariant of ``repository.consistency`` and, unless ``read_results`` is off,
    every succeeded run's result (of one campaign with ``campaign_id``)."""
    report = Report(campaign_id=campaign_id)
    cid, limit = campaign_id, MAX_LISTED
    sections = (
        ("campaign totals",
         queries.campaign_totals(session=session, campaign_id=cid, limit=limit)),
        ("configuration totals",
         queries.config_totals(session=session, campaign_id=cid, limit=limit)),
        ("succeeded runs",
         queries.succeeded_without_result(session=session, campaign_id=cid, limit=limit)),
        ("stuck runs",
         queries.stuck_runs(session=session, campaign_id=cid, now=now, stale=stale, limit=limit)),
    )  # fmt: skip
    for kind, found in sections:
        report.findings += found
        if len(found) >= MAX_LISTED:
            report.truncated.append(kind)
    if not read_results:
        return report
    unreadable = 0
    for run_id, in_campaign, group in queries.succeeded_results(session=session, campaign_id=cid):
        report.results_read += 1
        problem = result_problem(zarr_root, in_campaign, run_id, group)
        if problem is None:
            continue
        unreadable += 1
        if unreadable <= MAX_LISTED:
            report.findings.append(Finding("unreadable_result", in_campaign, run_id, problem))
    if unreadable > MAX_LISTED:
        report.truncated.append(f"results ({unreadable} unreadable)")
    return report
