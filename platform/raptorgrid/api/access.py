"""Who may read what, and which uploaded cases a campaign may use (docs/security.md).

With ``read_requires_token`` reads are isolated: a non-admin token sees only its owner's
campaigns (their runs, statistics and trajectories) and its owner's or shared cases; any other
row is a 404, as if it did not exist. Without it reads are public. Either way only a campaign's
owner (or an admin) sees its owner name and spec, and only an admin sees where a run ran or
failed: the worker (host:pid), the traceback and the server paths in messages (``redact``).

A campaign may run on an uploaded case of its owner or on a shared one (an admin shares it:
``POST /cases/{id}/share``); an admin may use any. Library networks are shared by nature.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import HTTPException
from sqlalchemy.orm import Session

from raptorgrid import repository as repo
from raptorgrid.api.errors import not_found
from raptorgrid.auth import Principal
from raptorgrid.redact import without_paths
from raptorgrid.tables import Campaign, CaseFile, Run, RunMetrics, ScenarioRow


@dataclass(frozen=True)
class Reader:
    """The caller of a read: its principal (None: anonymous) and whether reads are isolated."""

    principal: Principal | None
    isolated: bool

    @property
    def is_admin(self) -> bool:
        return self.principal is not None and self.principal.is_admin

    @property
    def scope(self) -> str | None:
        """The owner whose rows alone this reader sees; None when it sees every row."""
        if not self.isolated or self.principal is None or self.principal.is_admin:
            return None
        return self.principal.owner

    def may_read(self, owner: str | None) -> bool:
        return self.scope is None or owner == self.scope

    def owns(self, owner: str | None) -> bool:
        """True for the resource's owner and for admins (they see owner names and specs)."""
        return self.is_admin or (self.principal is not None and self.principal.owner == owner)

    def message(self, text: str) -> str:
        """A run's message as this reader may see it (paths only for admins)."""
        return text if self.is_admin else without_paths(text)


def visible_campaign(*, session: Session, reader: Reader, campaign_id: int) -> Campaign:
    """The campaign, or 404 when there is none or the reader may not see it."""
    campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
    if campaign is None or not reader.may_read(campaign.owner):
        raise not_found("campaign", campaign_id)
    return campaign


def visible_run(
    *, session: Session, reader: Reader, run_id: int
) -> tuple[Run, ScenarioRow, RunMetrics | None]:
    """The run with its scenario and metrics, or 404 as ``visible_campaign`` for its campaign."""
    found = repo.get_run(session=session, run_id=run_id)
    if found is None:
        raise not_found("run", run_id)
    if reader.scope is not None:
        campaign = repo.get_campaign(session=session, campaign_id=found[0].campaign_id)
        if campaign is None or not reader.may_read(campaign.owner):
            raise not_found("run", run_id)
    return found


def visible_case(*, session: Session, reader: Reader, case_id: int) -> CaseFile:
    """The uploaded case, or 404 when there is none or it is another owner's unshared case."""
    row = session.get(CaseFile, case_id)
    if row is None or not (row.shared or reader.may_read(row.owner)):
        raise not_found("case", case_id)
    return row


def may_use_case(principal: Principal, row: CaseFile) -> bool:
    return principal.is_admin or row.shared or row.owner == principal.owner


def check_case_use(*, session: Session, principal: Principal, network: str) -> None:
    """422 (``body.network``) when ``network`` is an uploaded case ``principal`` may not use;
    a missing case gets the same answer, so the refusal tells nothing of others' cases."""
    from models.library import is_stored_case
    from raptorgrid.case_store import stored_case_id

    if not is_stored_case(network):
        return
    case_id = stored_case_id(network)  # the spec checked the form already
    row = session.get(CaseFile, case_id)
    if row is None or not may_use_case(principal, row):
        raise HTTPException(
            status_code=422,
            detail=[
                {
                    "loc": ["body", "network"],
                    "msg": f"network {network!r}: no uploaded case {case_id} that you own or "
                    "that is shared (an admin shares a case with POST /cases/{id}/share)",
                    "type": "value_error",
                }
            ],
        )
