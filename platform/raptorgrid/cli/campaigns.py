"""Campaign commands: ``run`` (embedded), ``submit``, ``status``, ``cancel`` and ``retry`` (API or
local database)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from raptorgrid.cli.errors import EXIT_FAILED, UserError, existing_database, fail, user_errors
from raptorgrid.cli.render import campaign_summary, console, counts_line, method_table
from raptorgrid.cli.results import print_results

SpecArg = Annotated[Path, typer.Argument(help="campaign spec (JSON file, or - for stdin)")]
ApiOpt = Annotated[str | None, typer.Option("--api", help="base URL of a raptorgrid API")]


def load_spec(path: Path) -> dict[str, Any]:
    """The spec file as a JSON object (a clear error when it is missing or malformed)."""
    text = sys.stdin.read() if str(path) == "-" else path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: a spec is a JSON object")
    return data


def run(
    spec_path: SpecArg,
    workers: Annotated[
        int | None, typer.Option("--workers", "-w", min=1, help="worker processes")
    ] = None,
) -> None:
    """Run a campaign here: SQLite, local Zarr and N real Celery workers (no services needed)."""
    from raptorgrid.embedded import EmbeddedWorkers, WorkersDied
    from raptorgrid.runtime import usable_cpus
    from raptorgrid.settings import get_settings

    with user_errors():
        settings = get_settings()
        raw = load_spec(spec_path)
        count = workers or settings.embedded_workers
        started = time.perf_counter()
        # The workers start first, from the spec's JSON: their start-up (Celery, JAX, loading
        # the network's executables) then overlaps this process's imports, validation and
        # expansion, which is what keeps the first result within seconds of the command.
        network, methods = _prebuild_hint(raw)
        worker_settings = settings.model_copy(
            update={"prebuild_networks": [network] if network else [], "prebuild_methods": methods}
        )
        # On a machine with fewer cores than workers + 1, one core stays with this process
        # until the campaign is stored (2 cores, 2 workers: first result 7.0 s after the
        # command with both started at once, 5.3 s with one; the second joins ~3 s later).
        pool = EmbeddedWorkers(worker_settings, count).start(max(1, len(usable_cpus()) - 1))
        try:
            from raptorgrid import migrate
            from raptorgrid.spec import CampaignCreate

            spec = CampaignCreate.model_validate(raw)
        except BaseException:
            pool.kill()  # nothing was claimed: no warm shutdown to wait for
            raise
        from raptorgrid.celery_app import create_celery
        from raptorgrid.db import Database
        from raptorgrid.embedded import wait_for_campaign
        from raptorgrid.scoring import score_campaign
        from raptorgrid.submission import submit_campaign

        try:
            migrate.upgrade(settings)
            db = Database.from_settings(settings)
            celery = create_celery(settings)
            submitted = submit_campaign(
                db=db, celery=celery, settings=settings, spec=spec, raw_spec=raw
            )
            pool.start()  # the workers that waited for this process's core
            console.print(
                f"campaign {submitted.campaign_id}: {submitted.n_runs} runs "
                f"({submitted.n_scenarios} scenarios) on {count} workers; data in "
                f"{settings.data_dir}",
                markup=False,
            )
            with Progress(
                TextColumn("[bold]runs"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=False,
            ) as progress:
                bar = progress.add_task("runs", total=submitted.n_runs, counts="")

                def show(counts: dict[str, int]) -> None:
                    done = counts["succeeded"] + counts["failed"] + counts["cancelled"]
                    shown = {k: counts[k] for k in ("succeeded", "failed", "running", "queued")}
                    # a CCT campaign queues its next probes as it goes: the total grows
                    total = max(submitted.n_runs, sum(counts.values()))
                    progress.update(bar, completed=done, total=total, counts=counts_line(shown))

                campaign = wait_for_campaign(
                    db=db,
                    celery=celery,
                    settings=settings,
                    campaign_id=submitted.campaign_id,
                    workers=pool,
                    on_progress=show,
                )
        except WorkersDied as exc:
            raise fail(str(exc), EXIT_FAILED) from None
        finally:
            pool.stop()
        # a worker stopped between committing a run and scoring it leaves that run unscored:
        # score whatever is missing (idempotent, a no-op when the workers scored everything)
        score_campaign(db=db, zarr_root=settings.zarr_root, campaign_id=campaign.id)
        elapsed = time.perf_counter() - started
        console.print(
            f"campaign {campaign.id} '{campaign.name}' {campaign.status}: "
            f"{campaign.n_succeeded} succeeded, {campaign.n_failed} failed, "
            f"{campaign.n_cancelled} cancelled in {elapsed:.1f} s",
            markup=False,
            highlight=False,
        )
        with db.read() as session:
            print_results(session, campaign.id, ranking_limit=5)
        db.dispose()
        console.print(
            f"next: raptorgrid report {campaign.id}   (plots and an HTML report)\n"
            f"      raptorgrid export {campaign.id}   (trajectories for xarray)\n"
            f"      raptorgrid api, then open {settings.api_url}/dashboard/?campaign={campaign.id}",
            markup=False,
            highlight=False,
        )


def _prebuild_hint(raw: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The network and methods to prebuild, read from the spec's JSON before it is validated
    (a wrong hint costs a logged prebuild failure; validation reports the spec's errors): the
    campaign's methods, its reference's included, the ones that compile their own executables
    first (RAPTOR, Diffrax) so that the workers' rotated prebuilds (``embedded``) compile those
    side by side; SciPy's methods share one set of kernels."""
    network = raw.get("network") if isinstance(raw.get("network"), str) else None
    sweeps = raw.get("methods") if isinstance(raw.get("methods"), list) else []
    entries = list(sweeps)
    reference = raw.get("reference")
    if isinstance(reference, dict):
        if "method" not in reference:  # {}: the default reference (imports the spec module)
            from raptorgrid.spec import ReferenceSpec

            reference = {"method": ReferenceSpec().method}
        entries.append(reference)
    methods = {
        entry["method"]
        for entry in entries
        if isinstance(entry, dict) and isinstance(entry.get("method"), str)
    }
    own = ("raptor", "kvaerno5", "tsit5", "dopri5", "trapezoid", "ida")
    return network, sorted(methods, key=lambda m: (m not in own, m))


def _auth_headers() -> dict[str, str]:
    """``Authorization`` from ``RAPTORGRID_API_TOKEN`` (the settings), when set."""
    from raptorgrid.settings import get_settings

    token = get_settings().api_token
    return {"Authorization": f"Bearer {token.get_secret_value()}"} if token else {}


def _api_call(method: str, url: str, **kwargs: Any) -> Any:
    try:
        response = httpx.request(method, url, timeout=30.0, headers=_auth_headers(), **kwargs)
    except httpx.HTTPError as exc:
        raise UserError(f"cannot reach the API at {url}: {exc}") from None
    if response.status_code == 422:
        detail = response.json().get("detail", [])
        lines = [
            f"  {'.'.join(str(p) for p in d.get('loc', []) if p != 'body')}: {d.get('msg')}"
            for d in detail
        ]
        raise UserError("the API refused the spec:\n" + "\n".join(lines))
    if response.status_code >= 400:
        raise UserError(f"{method} {url}: {response.status_code} {response.text}")
    return response.json()


def submit(spec_path: SpecArg, api: ApiOpt = None) -> None:
    """Submit a campaign to a running API; prints its id and run count."""
    from raptorgrid.settings import get_settings

    with user_errors():
        base = (api or get_settings().api_url).rstrip("/")
        created = _api_call("POST", f"{base}/campaigns", json=load_spec(spec_path))
        console.print(
            f"campaign {created['id']}: {created['n_runs']} runs ({created['n_scenarios']} "
            f"scenarios) submitted to {base}",
            markup=False,
        )


def status(
    campaign_id: Annotated[int, typer.Argument(help="campaign id")],
    api: ApiOpt = None,
) -> None:
    """Progress and per-method summary of a campaign (from the API, or the local database)."""
    with user_errors():
        if api:
            base = api.rstrip("/")
            campaign = _api_call("GET", f"{base}/campaigns/{campaign_id}")
            rows = _api_call("GET", f"{base}/campaigns/{campaign_id}/stats")["methods"]
        else:
            campaign, rows = _local_status(campaign_id)
        console.print(campaign_summary(campaign), highlight=False, markup=False)
        console.print(method_table(rows))


def cancel(
    campaign_id: Annotated[int, typer.Argument(help="campaign id")],
    api: ApiOpt = None,
) -> None:
    """Cancel a campaign: queued runs now, running ones at their next heartbeat."""
    with user_errors():
        if api:
            campaign = _api_call("POST", f"{api.rstrip('/')}/campaigns/{campaign_id}/cancel")
        else:
            campaign = _local_cancel(campaign_id)
        console.print(campaign_summary(campaign), highlight=False, markup=False)


def _local_cancel(campaign_id: int) -> dict[str, Any]:
    from raptorgrid import repository as repo
    from raptorgrid.settings import get_settings
    from raptorgrid.tables import utcnow

    db = existing_database(get_settings())
    try:
        with db.write() as session:
            if repo.get_campaign(session=session, campaign_id=campaign_id) is None:
                raise UserError(f"campaign {campaign_id} not found")
            repo.cancel_campaign(session=session, campaign_id=campaign_id, now=utcnow())
    finally:
        db.dispose()
    return _local_status(campaign_id)[0]


ReasonOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--reason",
        help="a failure reason to retry (repeat the option for several; default: internal_error "
        "and time_limit, the infrastructure ones)",
    ),
]


def retry_reasons(given: list[str] | None) -> list[str]:
    """The reasons to retry: ``given`` checked against the failure reasons of failed runs
    (a ``UserError`` listing them for an unknown one), else the default ones."""
    from raptorgrid.repository.retry import DEFAULT_RETRY_REASONS, RETRY_REASONS

    if not given:
        return [r.value for r in DEFAULT_RETRY_REASONS]
    valid = [r.value for r in RETRY_REASONS]
    wrong = [r for r in given if r not in valid]
    if wrong:
        raise UserError(
            f"--reason {', '.join(repr(r) for r in wrong)}: not the reason of a failed run; "
            f"choose among {', '.join(valid)}"
        )
    return list(dict.fromkeys(given))


def retry(
    campaign_id: Annotated[int, typer.Argument(help="campaign id")],
    reasons: ReasonOpt = None,
    api: ApiOpt = None,
) -> None:
    """Run again a campaign's failed runs of the chosen reasons (attempts reset, re-sent in
    batches); runs not failed or failed otherwise are untouched. A cancelled campaign is not
    retried."""
    with user_errors():
        chosen = retry_reasons(reasons)
        if api:
            url = f"{api.rstrip('/')}/campaigns/{campaign_id}/retry"
            retried = _api_call("POST", url, json={"reasons": chosen})
            requeued, messages = retried["requeued"], retried["messages"]
        else:
            requeued, messages = _local_retry(campaign_id, chosen)
        note = "" if requeued else " (no failed run of those reasons)"
        console.print(
            f"campaign {campaign_id}: {requeued} failed runs ({', '.join(chosen)}) queued again "
            f"in {messages} messages{note}",
            markup=False,
            highlight=False,
        )


def _local_retry(campaign_id: int, reasons: list[str]) -> tuple[int, int]:
    from raptorgrid.celery_app import create_celery
    from raptorgrid.retry import NotRetryable, retry_campaign
    from raptorgrid.settings import get_settings
    from solvers.status import FailureReason

    settings = get_settings()
    db = existing_database(settings)
    try:
        retried = retry_campaign(
            db=db,
            celery=create_celery(settings),
            settings=settings,
            campaign_id=campaign_id,
            reasons=[FailureReason(r) for r in reasons],
        )
    except NotRetryable as exc:
        raise UserError(str(exc)) from None
    finally:
        db.dispose()
    if retried is None:
        raise UserError(f"campaign {campaign_id} not found in {settings.database_url}")
    return len(retried.run_ids), retried.messages


def _local_status(campaign_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from raptorgrid import repository as repo
    from raptorgrid.api.schemas import CampaignPublic
    from raptorgrid.repository.stats import config_stats
    from raptorgrid.settings import get_settings

    db = existing_database(get_settings())
    try:
        with db.read() as session:
            campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
            if campaign is None:
                raise UserError(
                    f"campaign {campaign_id} not found in {get_settings().database_url}"
                )
            counts = repo.run_counts(session=session, campaign_id=campaign_id)
            waiting = repo.store_waiting(session=session, campaign_id=campaign_id)
            public = CampaignPublic.from_row(campaign, counts, waiting=waiting).model_dump(
                mode="json"
            )
            rows = [c.as_dict() for c in config_stats(session=session, campaign_id=campaign_id)[0]]
    finally:
        db.dispose()
    return public, rows


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(submit)
    app.command()(status)
    app.command()(cancel)
    app.command()(retry)
