"""A finished campaign exported as a run table (CSV, Parquet) and one xarray dataset (Zarr)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from raptorgrid import repository as repo
from raptorgrid.export import export_campaign
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import open_run

from workers.runner import WorkerContext, execute_run


@pytest.fixture
def finished_campaign(sqlite_settings, sqlite_db, small_spec):
    small_spec["methods"].append({"method": "radau", "options": {"max_steps": 2}})  # fails
    spec = CampaignCreate.model_validate(small_spec)
    expansion = expand(spec, settings=sqlite_settings)
    with sqlite_db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expansion, now=utcnow()
        )
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    for run_id in run_ids:
        execute_run(run_id, worker="test", ctx=context)
    return campaign.id, run_ids


def test_export_writes_the_table_and_the_stacked_dataset(
    finished_campaign, sqlite_settings, sqlite_db, tmp_path
):
    campaign_id, run_ids = finished_campaign
    with sqlite_db.read() as session:
        paths = export_campaign(
            session=session,
            zarr_root=sqlite_settings.zarr_root,
            campaign_id=campaign_id,
            out_dir=tmp_path,
        )
    table = pd.read_csv(paths.csv)
    assert list(table["run_id"]) == run_ids
    assert set(table["status"]) == {"succeeded", "failed"}
    assert set(table.loc[table["status"] == "failed", "reason"]) == {"max_steps"}
    parquet = pd.read_parquet(paths.parquet)
    assert list(parquet["run_id"]) == run_ids and (parquet["accepted"] > 0).all()
    for column in ("accepted", "solve_seconds", "method", "status"):
        pd.testing.assert_series_equal(parquet[column], table[column], check_dtype=False)

    ds = xr.open_zarr(paths.dataset)
    succeeded = table[table["status"] == "succeeded"]
    assert ds.sizes["run"] == paths.n_stacked == len(succeeded)
    assert list(ds["run_id"].values) == list(succeeded["run_id"])
    assert {"method", "config", "solve_seconds", "scenario"} <= set(ds.coords)
    # the stacked trajectories are the runs' own, by name
    first = int(succeeded["run_id"].iloc[0])
    own = open_run(sqlite_settings.zarr_root, campaign_id, first)
    np.testing.assert_array_equal(
        ds.x.sel(run=ds.run_id == first).squeeze("run").sel(state="omega[gen2]").values,
        own.x.sel(state="omega[gen2]").values,
    )
