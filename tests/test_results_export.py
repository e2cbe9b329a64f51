"""A finished campaign exported as a run table (CSV, Parquet) and one xarray dataset (Zarr)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import raptorgrid
import xarray as xr
from raptorgrid import repository as repo
from raptorgrid.export import export_campaign
from raptorgrid.settings import Settings
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
    assert list(ds["run"].values) == list(succeeded["run_id"])  # indexed by run id
    assert {"method", "config", "solve_seconds", "scenario", "run_kcl_max"} <= set(ds.coords)
    # the stacked trajectories are the runs' own, one data variable per name, with units
    first = int(succeeded["run_id"].iloc[0])
    own = open_run(sqlite_settings.zarr_root, campaign_id, first)
    np.testing.assert_array_equal(
        ds["omega[gen2]"].sel(run=first).values, own.x.sel(state="omega[gen2]").values
    )
    np.testing.assert_array_equal(
        ds["V[bus7]"].sel(run=first).values, own.y.sel(output="V[bus7]").values
    )
    assert ds["delta[gen1]"].attrs["units"] == "rad" and ds["time"].attrs["units"] == "s"
    assert ds["V[bus7]"].attrs["units"] == "1" and "per unit" in ds["V[bus7]"].attrs["long_name"]
    assert ds["V[bus7]"].attrs["kind"] == "output" and ds["omega[gen2]"].attrs["kind"] == "state"
    names = {str(n) for dim in ("state", "algebraic", "output") for n in own[dim].values}
    assert set(ds.data_vars) == names  # every name once (outputs repeating a state included)
    # the attributes describe the campaign, not its first run
    assert ds.attrs["campaign_id"] == campaign_id and ds.attrs["network"] == "wscc9"
    assert "run_id" not in ds.attrs and "scenario" not in ds.attrs
    assert json.loads(ds.attrs["spec"])["network"] == "wscc9"


def test_open_campaign_by_name_and_refuses_a_missing_database(
    finished_campaign, sqlite_settings, tmp_path
):
    campaign_id, run_ids = finished_campaign
    ds = raptorgrid.open_campaign(campaign_id, sqlite_settings)
    assert set(ds["run"].values) < set(run_ids) and ds.sizes["time"] == ds["time"].size
    picked = ds["omega[gen2]"].sel(run=ds["config"] == "rtol=1e-05")
    assert picked.sizes["run"] >= 1 and np.isfinite(picked.values).all()
    empty = Settings(data_dir=tmp_path / "nothing")
    with pytest.raises(Exception, match="no campaigns database"):
        raptorgrid.open_campaign(campaign_id, empty)
    assert not (tmp_path / "nothing" / "raptorgrid.sqlite").exists()
