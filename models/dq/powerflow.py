"""Power flows for the dq presets: a small polar Newton power flow for hand-written networks
(SMIB, microgrid, inverter test) on exactly the branch model the dq lines use, and the
conversion of a pandapower/MATPOWER solution (``models.powerflow.PowerFlowCase``) to
``NetworkData``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import root

from models.dq.network import NetworkData
from models.powerflow import PowerFlowCase

PF_TOL = 1e-13


@dataclass(frozen=True)
class Branch:
    """A pi-model branch between two named buses (pu on the system base; tap at ``frm``)."""

    frm: str
    to: str
    r: float
    x: float
    b: float = 0.0
    tap: float = 1.0
    shift: float = 0.0


@dataclass(frozen=True)
class Injection:
    """A device's power-flow role at ``bus``: ``slack`` (V, angle 0), ``pv`` (P, V) or ``pq``
    (P, Q); powers in pu on the system base, generator convention."""

    bus: str
    role: str
    p: float = 0.0
    q: float = 0.0
    v: float = 1.0


def _ybus(n: int, f: np.ndarray, t: np.ndarray, branches: Sequence[Branch]) -> np.ndarray:
    y = np.zeros((n, n), dtype=complex)
    for k, br in enumerate(branches):
        ys = 1.0 / complex(br.r, br.x)
        ratio = br.tap * np.exp(1j * br.shift)
        i, j = f[k], t[k]
        y[i, i] += (ys + 0.5j * br.b) / abs(ratio) ** 2
        y[j, j] += ys + 0.5j * br.b
        y[i, j] -= ys / np.conj(ratio)
        y[j, i] -= ys / ratio
    return y


def solve_small_power_flow(
    bus_names: Sequence[str],
    branches: Sequence[Branch],
    injections: Sequence[Injection],
    loads: dict[str, complex],
    *,
    base_mva: float,
    f_hz: float = 60.0,
    source: str = "",
) -> NetworkData:
    """Solve the power flow (one slack injection; PV buses hold |V|) and return ``NetworkData``
    with each injection's complex power (in injection order)."""
    names = list(bus_names)
    n = len(names)
    idx = {b: k for k, b in enumerate(names)}
    for item in [*injections, *(Injection(b, "pq") for b in loads)]:
        if item.bus not in idx:
            raise ValueError(f"unknown bus {item.bus!r}; buses: {names}")
    slack = [k for k, inj in enumerate(injections) if inj.role == "slack"]
    if len(slack) != 1:
        raise ValueError("exactly one injection must be the slack")
    f = np.array([idx[b.frm] for b in branches])
    t = np.array([idx[b.to] for b in branches])
    y = _ybus(n, f, t, branches)
    s_spec = np.zeros(n, dtype=complex)
    for bus, s in loads.items():
        s_spec[idx[bus]] -= s
    vm = np.ones(n)
    fixed_v = np.zeros(n, dtype=bool)
    slack_bus = idx[injections[slack[0]].bus]
    for inj in injections:
        k = idx[inj.bus]
        if inj.role in ("slack", "pv"):
            vm[k], fixed_v[k] = inj.v, True
        if inj.role in ("pv", "pq"):
            s_spec[k] += inj.p + (1j * inj.q if inj.role == "pq" else 0.0)
    angle_free = np.array([k != slack_bus for k in range(n)])

    def voltages(w):
        va = np.zeros(n)
        va[angle_free] = w[: angle_free.sum()]
        v_mag = vm.copy()
        v_mag[~fixed_v] = w[angle_free.sum() :]
        return v_mag * np.exp(1j * va)

    def mismatch(w):
        v = voltages(w)
        s = v * np.conj(y @ v) - s_spec
        return np.concatenate([s.real[angle_free], s.imag[~fixed_v]])

    w0 = np.concatenate([np.zeros(angle_free.sum()), np.ones((~fixed_v).sum())])
    sol = root(mismatch, w0, method="hybr", tol=PF_TOL)
    if not sol.success or np.max(np.abs(mismatch(sol.x))) > 1e-10:
        raise RuntimeError(f"power flow did not converge: {sol.message}")
    v = voltages(sol.x)
    s_bus = v * np.conj(y @ v)  # net injection
    residual = s_bus - s_spec  # what the slack / PV devices still supply
    device_s = []
    for inj in injections:
        k = idx[inj.bus]
        if inj.role == "pq":
            device_s.append(complex(inj.p, inj.q))
        elif inj.role == "pv":
            device_s.append(complex(inj.p, residual[k].imag + 0.0))
            residual[k] = complex(residual[k].real, 0.0)
        else:
            device_s.append(complex(residual[k].real + 0.0, residual[k].imag))
    load = np.zeros(n, dtype=complex)
    for bus, s in loads.items():
        load[idx[bus]] += s
    zeros = np.zeros(n)
    return NetworkData(
        base_mva=base_mva,
        f_hz=f_hz,
        bus_names=tuple(names),
        v=v,
        load_p=load.real,
        load_q=load.imag,
        shunt_g=zeros,
        shunt_b=zeros.copy(),
        branch_names=_branch_names([(b.frm, b.to) for b in branches]),
        branch_from=f,
        branch_to=t,
        branch_r=np.array([b.r for b in branches]),
        branch_x=np.array([b.x for b in branches]),
        branch_b=np.array([b.b for b in branches]),
        branch_tap=np.array([b.tap for b in branches]),
        branch_shift=np.array([b.shift for b in branches]),
        branch_status=np.ones(len(branches)),
        device_bus=np.array([idx[inj.bus] for inj in injections]),
        device_s=np.array(device_s),
        source=source or "own polar Newton power flow (scipy hybr), tolerance 1e-13 pu",
    )


def _branch_names(pairs) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    out = []
    for f, t in pairs:
        name = f"br_{f}_{t}"
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return tuple(out)


def from_power_flow_case(pf: PowerFlowCase, source: str) -> NetworkData:
    """``NetworkData`` of a pandapower solution; one device per in-service generator."""
    numbers = [str(int(b)) for b in pf.bus_numbers]
    pairs = [(numbers[f], numbers[t]) for f, t in zip(pf.branch_from, pf.branch_to, strict=True)]
    bus_names = tuple(f"bus{n}" for n in numbers)
    return NetworkData(
        base_mva=pf.base_mva,
        f_hz=pf.f_hz,
        bus_names=bus_names,
        v=pf.voltage,
        load_p=pf.load_p,
        load_q=pf.load_q,
        shunt_g=pf.shunt_g,
        shunt_b=pf.shunt_b,
        branch_names=_branch_names(pairs),
        branch_from=pf.branch_from,
        branch_to=pf.branch_to,
        branch_r=pf.branch_r,
        branch_x=pf.branch_x,
        branch_b=pf.branch_b,
        branch_tap=pf.branch_tap,
        branch_shift=pf.branch_shift,
        branch_status=pf.branch_status,
        device_bus=pf.gen_bus,
        device_s=pf.gen_p + 1j * pf.gen_q,
        branch_g=pf.branch_g,
        source=source,
    )
