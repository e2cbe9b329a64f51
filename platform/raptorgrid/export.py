"""A campaign exported for analysis outside the platform.

* the run table (one row per run: scenario, method, configuration, status, reason, every work
  counter and score) as CSV and Parquet;
* the trajectories as one xarray Dataset written to Zarr, with dimensions ``run``, ``time`` and
  ``state``/``algebraic``/``output``, and the run table's columns as coordinates along ``run``.
  Only runs with data (succeeded) are stacked; every run shares the campaign's evaluation grid.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
from sqlalchemy import select
from sqlalchemy.orm import Session

from raptorgrid.tables import STATS_COLUMNS, Run, RunMetrics, ScenarioRow
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


def campaign_dataset(zarr_root: ZarrRoot, campaign_id: int, table: pd.DataFrame) -> xr.Dataset:
    """The succeeded runs' trajectories stacked along ``run``, the table as coordinates."""
    done = table[table["status"] == "succeeded"]
    runs = [open_run(zarr_root, campaign_id, int(run_id)) for run_id in done["run_id"]]
    if not runs:
        raise ValueError(f"campaign {campaign_id} has no succeeded run to export")
    keep = ["x", "z", "y"]
    stacked = xr.concat([ds[keep].reset_coords(drop=True) for ds in runs], dim="run", join="exact")
    coords = {name: ("run", done[name].to_numpy()) for name in _columns()}
    return stacked.assign_coords(coords).assign_attrs(campaign_id=campaign_id)


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
    dataset = campaign_dataset(zarr_root, campaign_id, table)
    path = out_dir / f"campaign_{campaign_id}.zarr"
    with warnings.catch_warnings():  # zarr notes that consolidation is not in the v3 spec yet
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        dataset.to_zarr(path, mode="w", consolidated=True)
    return ExportPaths(csv, parquet, path, len(table), int(dataset.sizes["run"]))
