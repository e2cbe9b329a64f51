"""IEEE Type DC1A exciter (IEEE Type 1 DC-commutator exciter with rate feedback).

Source: P. W. Sauer and M. A. Pai, *Power System Dynamics and Stability*, Prentice Hall, 1998,
Ch. 7, exciter equations of the multimachine two-axis model and the data of Example 7.1 (identical
exciters on the three machines: KA = 20, TA = 0.2 s, KE = 1.0, TE = 0.314 s, KF = 0.063,
TF = 0.35 s, SE(Efd) = 0.0039 exp(1.555 Efd)). Per unit on the machine's field-voltage base
(Efd = 1 gives rated open-circuit voltage); time in s.

    TE dEfd/dt = -(KE + SE(Efd)) Efd + VR
    TA dVR/dt  = -VR + KA RF - (KA KF / TF) Efd + KA (Vref - Vt)
    TF dRF/dt  = -RF + (KF / TF) Efd

with SE(Efd) = SE_A exp(SE_B Efd) and Vt = |V| the terminal voltage magnitude (pu). The regulator
limits VR_min <= VR <= VR_max are omitted on purpose so the DAE stays smooth (a windup or
anti-windup limit would make f non-differentiable); KE is given, so no self-excited KE is solved.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from models.components.validation import any_finite, check_fields, non_negative, positive
from models.devices.base import DeviceModel, check_rules

STATES = ("Efd", "RF", "VR")
PARAMS = ("KA", "TA", "KE", "TE", "KF", "TF", "SE_A", "SE_B")
_RULES = (
    ("KA", positive, "> 0 (regulator gain, pu)"),
    ("TA", positive, "> 0 (time constant, s)"),
    ("KE", any_finite, "a finite number (exciter constant, pu)"),
    ("TE", positive, "> 0 (time constant, s)"),
    ("KF", non_negative, ">= 0 (rate-feedback gain, pu)"),
    ("TF", positive, "> 0 (time constant, s)"),
    ("SE_A", non_negative, ">= 0 (saturation coefficient, pu)"),
    ("SE_B", non_negative, ">= 0 (saturation exponent, 1/pu)"),
)


def validate_dc1a(device: str, data: Mapping) -> dict[str, float]:
    """Check the fields of ``PARAMS`` (positive gain and time constants, non-negative KF, SE)."""
    return check_fields(device, data, _RULES)


def saturation(efd, p: Mapping):
    """SE(Efd) = SE_A exp(SE_B Efd) (pu, JAX)."""
    return p["SE_A"] * jnp.exp(p["SE_B"] * efd)


def dc1a_derivatives(Efd, RF, VR, Vt, vref, p: Mapping):
    """(dEfd/dt, dRF/dt, dVR/dt) in pu/s."""
    d_efd = (-(p["KE"] + saturation(Efd, p)) * Efd + VR) / p["TE"]
    d_rf = (-RF + p["KF"] / p["TF"] * Efd) / p["TF"]
    ka = p["KA"]
    d_vr = (-VR + ka * RF - ka * p["KF"] / p["TF"] * Efd + ka * (vref - Vt)) / p["TA"]
    return d_efd, d_rf, d_vr


def init_dc1a(Efd: np.ndarray, Vt: np.ndarray, p: Mapping) -> dict[str, np.ndarray]:
    """Steady state for a given field voltage and terminal voltage (Sauer & Pai §7.6):
    VR = (KE + SE(Efd)) Efd,  RF = (KF / TF) Efd,  Vref = Vt + VR / KA."""
    efd = np.asarray(Efd, dtype=float)
    se = np.asarray(p["SE_A"], dtype=float) * np.exp(np.asarray(p["SE_B"], dtype=float) * efd)
    vr = (np.asarray(p["KE"], dtype=float) + se) * efd
    rf = np.asarray(p["KF"]) / np.asarray(p["TF"]) * efd
    return {"Efd": efd, "RF": rf, "VR": vr, "vref": np.asarray(Vt, dtype=float) + vr / p["KA"]}


def _init(efd, vt, p) -> dict:
    return init_dc1a(efd, vt, p)


def _derivatives(xs, vt, vref, vs, p):
    """The stabilizing signal ``vs`` adds to the voltage error (Vref - Vt + Vs)."""
    return dc1a_derivatives(*xs, vt - vs, vref, p)


def _output(xs, vt, p):
    return xs[0]


IEEE_DC1A = DeviceModel(
    name="ieee_dc1a",
    role="exciter",
    params=PARAMS,
    states=STATES,
    source="Sauer & Pai 1998, Ch. 7 and Example 7.1 (IEEE DC1A without limits)",
    check=check_rules(_RULES),
    init=_init,
    derivatives=_derivatives,
    output=_output,
    prefix="exc_",
)
