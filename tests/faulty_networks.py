"""Test-only networks whose runs must fail numerically, registered into the model library when
imported (a real worker imports this module with ``celery worker --include``).

* ``blowup``: x' = x^2 from x = 1, which leaves every bound at t = 1 (divergence);
* ``nan_source``: x' = -x + s, where the source s turns NaN at t = 0.5 (a clock state tau).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem
from models.library import NETWORKS, NetworkEntry


def blowup() -> DAESystem:
    return DAESystem(
        name="blowup",
        state_names=("x",),
        alg_names=("z",),
        f=lambda x, z, p: x**2,
        g=lambda x, z, p: z - x,
        x0=np.array([1.0]),
        z0=np.array([1.0]),
        params={"unused": np.array(0.0)},
    )


def nan_source() -> DAESystem:
    def f(x, z, p):
        source = jnp.where(x[1] > 0.5, jnp.nan, 0.0)
        return jnp.stack([-x[0] + source, jnp.ones(())])

    return DAESystem(
        name="nan_source",
        state_names=("x", "tau"),
        alg_names=("z",),
        f=f,
        g=lambda x, z, p: z - x[:1],
        x0=np.array([1.0, 0.0]),
        z0=np.array([1.0]),
        params={"unused": np.array(0.0)},
    )


NETWORKS.setdefault("blowup", NetworkEntry("blowup", "test: x' = x^2 diverges at t = 1", blowup))
NETWORKS.setdefault(
    "nan_source", NetworkEntry("nan_source", "test: a source turns NaN at t = 0.5", nan_source)
)
