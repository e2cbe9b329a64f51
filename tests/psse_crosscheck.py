"""Our trajectories beside ANDES's references (``tests/reference/andes``): shared by the
cross-check tests and ``benchmarks/psse_crosscheck.py``."""

from __future__ import annotations

import csv
import dataclasses
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from models.dae import DAESystem
from models.disturbances import BranchTrip, BusFault, GeneratorTrip
from models.psse.case import ANDES_LOAD_CONVERSION, build_psse_case
from models.scenarios import make_scenario
from solvers import solve

DATA = Path(__file__).resolve().parent / "data" / "psse"
REFERENCE = Path(__file__).resolve().parent / "reference" / "andes"
EVENTS = ("fault", "line", "gen")
KINDS = ("omega", "delta", "V")


def metadata() -> dict:
    return json.loads((REFERENCE / "cases.json").read_text())


def spread() -> dict:
    return json.loads((REFERENCE / "spread.json").read_text())


def load_conversion(case: str) -> tuple[float, float, float, float] | None:
    """The loads of ``case`` in the dynamics as its ANDES reference runs them: ANDES's PQ
    conversion (every constant-power part to constant admittance), or, for a case whose
    ``cases.json`` entry says ``"loads": "as given"`` (ANDES run with its PQ loads kept constant
    power and ZIP records for the .raw's parts), the .raw's parts unconverted (None)."""
    spec = metadata()["cases"][case]
    return None if spec.get("loads") == "as given" else ANDES_LOAD_CONVERSION


@lru_cache(maxsize=8)
def system(case: str) -> DAESystem:
    spec = metadata()["cases"][case]
    raw, dyr = DATA / spec["raw"], DATA / spec["dyr"]
    return build_psse_case(
        raw.read_text(), dyr.read_text(), case, raw_file=raw.name, dyr_file=dyr.name,
        load_conversion=load_conversion(case),
    )  # fmt: skip


def reference(case: str, event: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    with (REFERENCE / f"{case}_{event}.csv").open() as fh:
        rows = list(csv.reader(fh))
    header, values = rows[0], np.array(rows[1:], dtype=float)
    return values[:, 0], {name: values[:, k] for k, name in enumerate(header) if k}


def disturbance(case: str, event: str):
    meta = metadata()
    spec = meta["cases"][case]
    t = meta["t_event"]
    if event == "fault":
        return BusFault(
            bus=f"bus{spec['fault_bus']}", t_fault=t, t_clear=meta["t_clear"], r=0.0,
            x=spec.get("fault_x", meta["fault_x"]),
        )  # fmt: skip
    if event in ("line", "reclose"):
        f, to, ckt = spec["line"]
        sys_ = system(case)
        names = sys_.names["branch"]
        for name in (f"line_{f}_{to}_{ckt}", f"line_{to}_{f}_{ckt}", f"xf_{f}_{to}_{ckt}",
                     f"xf_{to}_{f}_{ckt}"):  # fmt: skip
            if name in names:  # a reclose: ANDES's second toggle of the line, at T_CLEAR
                reclose = meta["t_clear"] if event == "reclose" else None
                return BranchTrip(branch=name, t=t, reclose=reclose)
        raise KeyError(f"no branch {f}-{to} ({ckt}) in {case}")
    bus, gid = spec["gen"]
    return GeneratorTrip(generator=f"gen{bus}_{gid}", t=t)


def tripped(case: str, event: str) -> str | None:
    if event != "gen":
        return None
    bus, gid = metadata()["cases"][case]["gen"]
    return f"gen{bus}_{gid}"


def deviations(
    case: str, event: str, method: str = "radau", built: DAESystem | None = None, **options
) -> dict[str, float]:
    """Largest |ours - ANDES| per quantity over the reference grid: rotor speed (pu), rotor angle
    relative to the first machine (rad), bus voltage magnitude (pu); the tripped machine and
    the converters (no rotor in the reference) left out (see
    ``tests/reference/andes_references.py``). Also returns the run's status. ``built``:
    the case's system built otherwise (default: ``system(case)``)."""
    sys_ = system(case) if built is None else built
    t_ref, ref = reference(case, event)
    scenario = make_scenario(sys_, disturbance(case, event), t_end=metadata()["t_end"])
    scenario = dataclasses.replace(scenario, t_eval=t_ref)
    result = solve(sys_, scenario, method, **options)
    out: dict[str, float] = {"succeeded": float(result.succeeded)}
    skip = tripped(case, event)
    gens = [g for g in sys_.names["generator"] if g != skip and f"omega[{g}]" in ref]
    first = gens[0]
    out["omega"] = max(float(np.max(np.abs(result.output(f"omega[{g}]") - ref[f"omega[{g}]"])))
                       for g in gens)  # fmt: skip
    d_ours = {g: result.output(f"delta[{g}]") - result.output(f"delta[{first}]") for g in gens}
    d_ref = {g: ref[f"delta[{g}]"] - ref[f"delta[{first}]"] for g in gens}
    out["delta"] = max(float(np.max(np.abs(d_ours[g] - d_ref[g]))) for g in gens)
    out["V"] = max(float(np.max(np.abs(result.output(f"V[{b}]") - ref[f"V[{b}]"])))
                   for b in sys_.names["bus"] if f"V[{b}]" in ref)  # fmt: skip
    return out
