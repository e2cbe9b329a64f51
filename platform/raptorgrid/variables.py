"""What a trajectory variable is: its CF-style ``units`` and ``long_name`` from its name, and a
run's dataset with one named data variable per state, algebraic variable and output.

Names are ``<quantity>[<element>]`` (``omega[gen2]``, ``V[bus7]``) or, on the device-assembled
and EMT networks, ``<element>.<quantity>`` (``G1.omega``, ``pcc.v_D``). Per-unit quantities have
``units = "1"`` (dimensionless, as CF/UDUNITS writes them) and say "per unit" in ``long_name``;
angles are in rad, time in s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import xarray as xr

KINDS = (("x", "state"), ("z", "algebraic"), ("y", "output"))
"""The run dataset's arrays and their name dimensions (``zarr_store.run_arrays``)."""


@dataclass(frozen=True)
class Quantity:
    pattern: str
    """Regular expression matched against the quantity part of the name."""
    long_name: str
    units: str


QUANTITIES = [
    Quantity(r"delta|theta", "angle", "rad"),
    Quantity(r"omega_coi", "centre-of-inertia speed, per unit of nominal", "1"),
    Quantity(r"omega", "rotor speed, per unit of nominal", "1"),
    Quantity(r"slip", "slip", "1"),
    Quantity(r"V|Vr|Vi|Vt_[DQ]|Vg_[DQ]|v_[dqDQ]|vc_[dq]", "voltage, per unit", "1"),
    Quantity(r"Efd|efd|VR|RF|Eq_p|Ed_p|em_p|er_p", "machine/exciter voltage, per unit", "1"),
    Quantity(r"I|Id|Iq|i_.*|iL_[DQ]|if_[dq]|ig_[dq]", "current, per unit", "1"),
    Quantity(r"P|Pe|Pt|Pm|pm|Pf|Pv|Te", "active power or torque, per unit", "1"),
    Quantity(r"Q|Qf", "reactive power, per unit", "1"),
    Quantity(r"psi_.*", "flux linkage, per unit", "1"),
    Quantity(r"kcl_max", "largest KCL residual, per unit", "1"),
]


def quantity(name: str) -> str:
    """The quantity part of a variable name: ``omega[gen2]`` -> ``omega``, ``G1.psi_d`` ->
    ``psi_d``, ``u:pcc.i_D`` -> ``i_D``."""
    head = name.split("[", 1)[0]
    return head.rsplit(".", 1)[-1].rsplit(":", 1)[-1]


def describe(name: str) -> dict[str, str]:
    """``units`` and ``long_name`` of a variable ("1" and the bare name when unknown)."""
    q = quantity(name)
    for known in QUANTITIES:
        if re.fullmatch(known.pattern, q):
            return {"units": known.units, "long_name": f"{name}: {known.long_name}"}
    return {"units": "1", "long_name": name}


def display_unit(name: str) -> str:
    """The unit as an axis label shows it: "pu" for per-unit quantities, "" when unknown."""
    described = describe(name)
    if described["units"] != "1":
        return described["units"]
    return "pu" if "per unit" in described["long_name"] else ""


def variable_names(ds: xr.Dataset) -> list[tuple[str, str]]:
    """(name, kind) of every variable of a run dataset, states first; a name that appears in
    more than one kind (an output that repeats a state) is listed once, at its first kind."""
    seen: dict[str, str] = {}
    for _, dim in KINDS:
        for n in ds[dim].values:
            seen.setdefault(str(n), dim)
    return list(seen.items())


def named(ds: xr.Dataset) -> xr.Dataset:
    """The run (or a stack of runs) with one data variable per name, each with ``units``,
    ``long_name`` and ``kind``; dimensions other than the name dimension are kept."""
    out = {}
    for array, dim in KINDS:
        names = [str(n) for n in ds[dim].values]
        values = ds[array].reset_coords(drop=True)
        for k, name in enumerate(names):
            if name in out:
                continue
            column = values.isel({dim: k}, drop=True)
            out[name] = column.assign_attrs(kind=dim, **describe(name))
    dataset = xr.Dataset(out)
    if "time" in dataset.coords:
        dataset["time"].attrs.update(units="s", long_name="time", standard_name="time")
    return dataset
