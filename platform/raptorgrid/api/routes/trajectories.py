"""/runs/{id}/trajectory: named variables of a run from Zarr, cut to [t0, t1] and downsampled for
plotting, with the scenario's reference run alongside.

Downsampling keeps, in each of ``max_points // 2`` time buckets, the samples where every asked
variable reaches its minimum and maximum (plus the first and last sample), so spikes of a fault
survive; the reply never has more than ``max_points`` samples per variable.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
import xarray as xr
from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel
from sqlalchemy import select

from raptorgrid import variables
from raptorgrid.api.access import Reader, visible_run
from raptorgrid.api.deps import ReadAccess, ReaderDep, SessionDep, SettingsDep
from raptorgrid.tables import Run
from raptorgrid.zarr_store import open_run
from solvers.status import RunStatus

router = APIRouter(prefix="/runs", tags=["results"], dependencies=[ReadAccess])

_DIMS = (("x", "state"), ("z", "algebraic"), ("y", "output"))


def variable(ds: xr.Dataset, name: str) -> np.ndarray:
    """One variable on the evaluation grid by name (state, algebraic or output); an unknown
    name raises ``KeyError`` listing the valid ones."""
    for var, dim in _DIMS:
        names = [str(n) for n in ds[dim].values]
        if name in names:
            return np.asarray(ds[var].isel({dim: names.index(name)}).values, dtype=float)
    valid = [str(n) for _, dim in _DIMS for n in ds[dim].values]
    raise KeyError(f"unknown variable {name!r}; valid: {valid}")


def minmax_indices(columns: list[np.ndarray], max_points: int) -> np.ndarray:
    """Indices kept by the min/max-preserving downsampling (all when few enough)."""
    n = len(columns[0]) if columns else 0
    if n <= max_points:
        return np.arange(n)
    buckets = np.array_split(np.arange(n), max(1, (max_points - 2) // 2))
    keep = {0, n - 1}
    for bucket in buckets:
        for col in columns:
            values = col[bucket]
            if np.all(np.isnan(values)):
                keep.add(int(bucket[0]))
                continue
            keep.add(int(bucket[np.nanargmin(values)]))
            keep.add(int(bucket[np.nanargmax(values)]))
    return np.array(sorted(keep))


def _json(values: np.ndarray) -> list[float | None]:
    return [None if not math.isfinite(v) else float(v) for v in values]


def read_trajectory(
    ds: xr.Dataset, names: list[str], t0: float | None, t1: float | None, max_points: int
) -> dict[str, Any]:
    """The named variables within [t0, t1], downsampled (see the module docstring)."""
    t = np.asarray(ds["time"].values, dtype=float)
    mask = np.ones(len(t), dtype=bool)
    if t0 is not None:
        mask &= t >= t0
    if t1 is not None:
        mask &= t <= t1
    columns = [variable(ds, n)[mask] for n in names]
    idx = minmax_indices(columns, max_points)
    return {
        "time": _json(t[mask][idx]),
        "series": {n: _json(c[idx]) for n, c in zip(names, columns, strict=True)},
        "n_samples": int(mask.sum()),
        "downsampled": len(idx) < int(mask.sum()),
    }


def _names(vars_: list[str]) -> list[str]:
    names = [n.strip() for item in vars_ for n in item.split(",") if n.strip()]
    if not names:
        raise HTTPException(status_code=422, detail="give at least one variable in vars")
    return names


class VariablePublic(BaseModel):
    name: str
    kind: str
    """state, algebraic or output"""
    units: str
    """CF-style units ("1": dimensionless, per unit)"""
    unit: str
    """as an axis label shows it (pu, rad, ...; empty when unknown)"""
    long_name: str


class RunVariables(BaseModel):
    run_id: int
    variables: list[VariablePublic]


@router.get("/{run_id}/variables", response_model=RunVariables)
def read_run_variables(
    run_id: int, session: SessionDep, reader: ReaderDep, settings: SettingsDep
) -> RunVariables:
    """The run's variable names (states, algebraic variables, outputs) with their units."""
    run, _ = _stored_run(session, reader, run_id)
    ds = open_run(settings.zarr_root, run.campaign_id, run_id)
    return RunVariables(
        run_id=run_id,
        variables=[
            VariablePublic(
                name=name, kind=kind, unit=variables.display_unit(name), **variables.describe(name)
            )  # fmt: skip
            for name, kind in variables.variable_names(ds)
        ],
    )


def _stored_run(session: Any, reader: Reader, run_id: int) -> tuple[Run, Any]:
    """The run and its scenario; 404 when there is no such run or the reader may not see it
    (``api.access``), 409 when it has no data."""
    run, scenario, _ = visible_run(session=session, reader=reader, run_id=run_id)
    if run.zarr_group is None:
        raise HTTPException(
            status_code=409, detail=f"run {run_id} has no trajectory ({run.status})"
        )
    return run, scenario


@router.get("/{run_id}/trajectory")
def read_run_trajectory(
    run_id: int,
    session: SessionDep,
    reader: ReaderDep,
    settings: SettingsDep,
    vars: Annotated[list[str], Query(description="names, repeated or comma-separated")],
    t0: float | None = None,
    t1: float | None = None,
    max_points: Annotated[int, Query(ge=4, le=100_000)] = 1000,
    reference: bool = True,
) -> dict[str, Any]:
    """The run's variables by name and, when it exists and succeeded, its reference's."""
    run, scenario = _stored_run(session, reader, run_id)
    names = _names(vars)
    ref_id = None
    if reference and not run.is_reference:
        ref_id = session.execute(
            select(Run.id).where(
                Run.scenario_id == scenario.id,
                Run.is_reference.is_(True),
                Run.status == RunStatus.SUCCEEDED.value,
            )
        ).scalar()
    try:
        body = read_trajectory(
            open_run(settings.zarr_root, run.campaign_id, run_id), names, t0, t1, max_points
        )
        ref = (
            read_trajectory(
                open_run(settings.zarr_root, run.campaign_id, ref_id), names, t0, t1, max_points
            )
            if ref_id is not None
            else None
        )
    except KeyError as exc:
        raise HTTPException(status_code=422, detail=str(exc.args[0])) from None
    return {
        "run_id": run_id,
        "method": run.method,
        "config": run.config_label,
        "status": run.status,
        "scenario": scenario.label,
        **body,
        "reference": None if ref is None else {"run_id": ref_id, **ref},
    }
