"""A campaign exported for analysis outside the platform.

* the run table (one row per run: scenario, method, configuration, status, reason, every work
  counter and score) as CSV and Parquet;
* the trajectories as one xarray Dataset written to Zarr (``campaign_dataset``, also what
  ``raptorgrid.open_campaign`` returns): one data variable per state, algebraic variable and
  output, by name (``ds["omega[gen2]"]``), over (``run``, ``time``), with CF-style ``units`` and
  ``long_name`` (``raptorgrid.variables``); ``run`` is indexed by run id and carries the run
  table's columns as coordinates; the attributes describe the campaign (name, network, horizon,
  methods, reference, thresholds, the spec). Only runs with data (succeeded) are stacked; every
  run shares the campaign's evaluation grid. Documented in docs/results.md.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from sqlalchemy import select
from sqlalchemy.orm import Session

from raptorgrid import __version__, variables
from raptorgrid.tables import STATS_COLUMNS, Campaign, Run, RunMetrics, ScenarioRow
from raptorgrid.zarr_store import ZarrRoot, open_run

METRIC_COLUMNS = (
    *STATS_COLUMNS,
    "overhead_seconds",
    "n_points",
    "final_time",
    "state_error",
    "voltage_mae",
    "kcl_max",
)


@dataclass(frozen=True)
class ExportPaths:
    csv: Path
    parquet: Path
    dataset: Path
    n_runs: int
    n_stacked: int


def run_table(*, session: Session, campaign_id: int) -> pd.DataFrame:
    """Every run of the campaign with its scenario and metrics, ordered by run id."""
    rows = session.execute(
        select(Run, ScenarioRow, RunMetrics)
        .join(ScenarioRow, ScenarioRow.id == Run.scenario_id)
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .where(Run.campaign_id == campaign_id)
        .order_by(Run.id)
    ).all()
    records = []
    for run, scenario, metrics in rows:
        record = {
            "run_id": run.id,
            "scenario_index": scenario.index,
            "scenario": scenario.label,
            "disturbance_kind": scenario.disturbance.get("kind", ""),
            "ic_seed": scenario.ic_seed,
            "method": run.method,
            "config": run.config_label,
            "status": run.status,
            "reason": run.reason or "",
            "attempts": run.attempts,
        }
        for name in METRIC_COLUMNS:
            value = getattr(metrics, name, None) if metrics is not None else None
            record[name] = np.nan if value is None else value
        records.append(record)
    return pd.DataFrame.from_records(records, columns=_columns())


def _columns() -> list[str]:
    head = [
        "run_id",
        "scenario_index",
        "scenario",
        "disturbance_kind",
        "ic_seed",
        "method",
        "config",
        "status",
        "reason",
        "attempts",
    ]
    return head + list(METRIC_COLUMNS)


def campaign_dataset(zarr_root: ZarrRoot, campaign: Campaign, table: pd.DataFrame) -> xr.Dataset:
    """The succeeded runs' trajectories by name, stacked along ``run`` (indexed by run id), the
    run table as coordinates, the campaign described in the attributes."""
    done = table[table["status"] == "succeeded"]
    runs = [open_run(zarr_root, campaign.id, int(run_id)) for run_id in done["run_id"]]
    if not runs:
        raise ValueError(f"campaign {campaign.id} has no succeeded run to export")
    keep = ["x", "z", "y"]
    stacked = xr.concat(
        [ds[keep].drop_attrs() for ds in runs],
        dim="run",
        join="exact",
        coords="minimal",
        compat="override",
    )  # run 1's attributes are not the campaign's: dropped, the campaign's are set below
    dataset = variables.named(stacked)
    coords = {  # a column named like a variable (the score kcl_max) gets a run_ prefix
        (f"run_{name}" if name in dataset.data_vars else name): ("run", done[name].to_numpy())
        for name in _columns()
        if name != "run_id"
    }
    dataset = dataset.assign_coords(run=done["run_id"].to_numpy(), **coords)
    dataset["run"].attrs.update(long_name="run id")
    return dataset.assign_attrs(campaign_attributes(campaign))


def campaign_attributes(campaign: Campaign) -> dict[str, Any]:
    """The campaign as dataset attributes (strings and numbers only, so Zarr and NetCDF both
    store them)."""
    spec = campaign.spec or {}
    methods = sorted({m.get("method", "") for m in spec.get("methods", [])})
    return {
        "title": campaign.name,
        "Conventions": "CF-1.10",
        "source": f"raptorgrid {__version__}",
        "campaign_id": campaign.id,
        "campaign_name": campaign.name,
        "network": campaign.network,
        "t_end_s": float(campaign.t_end),
        "n_eval": int(campaign.n_eval),
        "n_scenarios": int(campaign.n_scenarios),
        "n_runs": int(campaign.n_runs),
        "methods": ", ".join(methods),
        "reference": json.dumps(spec.get("reference")),
        "thresholds": json.dumps(spec.get("thresholds")),
        "created_at": campaign.created_at.isoformat(),
        "spec": json.dumps(spec),
    }


def open_campaign_dataset(*, session: Session, zarr_root: ZarrRoot, campaign_id: int) -> xr.Dataset:
    """``campaign_dataset`` of a stored campaign (a ``LookupError`` when there is none)."""
    campaign = session.get(Campaign, campaign_id)
    if campaign is None:
        raise LookupError(f"campaign {campaign_id} not found")
    return campaign_dataset(
        zarr_root, campaign, run_table(session=session, campaign_id=campaign_id)
    )


def export_campaign(
    *, session: Session, zarr_root: ZarrRoot, campaign_id: int, out_dir: Path
) -> ExportPaths:
    """Write ``campaign_<id>_runs.csv``/``.parquet`` and ``campaign_<id>.zarr`` to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = run_table(session=session, campaign_id=campaign_id)
    if table.empty:
        raise ValueError(f"campaign {campaign_id} has no runs")
    csv = out_dir / f"campaign_{campaign_id}_runs.csv"
    parquet = out_dir / f"campaign_{campaign_id}_runs.parquet"
    table.to_csv(csv, index=False)
    table.to_parquet(parquet, index=False)
    dataset = open_campaign_dataset(session=session, zarr_root=zarr_root, campaign_id=campaign_id)
    path = out_dir / f"campaign_{campaign_id}.zarr"
    with warnings.catch_warnings():  # zarr notes that consolidation is not in the v3 spec yet
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        dataset.to_zarr(path, mode="w", consolidated=True)
    return ExportPaths(csv, parquet, path, len(table), int(dataset.sizes["run"]))
