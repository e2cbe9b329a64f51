"""Small DAEs with closed-form solutions, shared by the solver tests."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem


def linear_index1() -> DAESystem:
    """x1' = -x1 + z,  x2' = -100 x2 + z,  0 = z - k x1 (k a parameter).

    With k = 0.5: x1 = e^{-t/2}, z = e^{-t/2}/2, x2 = (1/2)(e^{-t/2} - e^{-100 t})/(99.5)
    + x2(0) e^{-100 t}. A stiff, index-1 problem whose algebraic variable is recovered exactly.
    """

    def f(x, z, p):
        return jnp.stack([-x[0] + z[0], -100.0 * x[1] + z[0]])

    def g(x, z, p):
        return jnp.stack([z[0] - p["k"] * x[0]])

    return DAESystem(
        name="linear_index1",
        state_names=("x1", "x2"),
        alg_names=("z",),
        f=f,
        g=g,
        x0=np.array([1.0, 0.0]),
        z0=np.array([0.5]),
        params={"k": np.array(0.5)},
        output_names=("z_twice",),
        outputs=lambda x, z, p: 2.0 * z,
        perturbation_scale=np.array([0.1, 0.0]),
    )


def linear_index1_exact(t: np.ndarray, k: float = 0.5) -> np.ndarray:
    """Exact (x1, x2) of ``linear_index1`` from x(0) = (1, 0)."""
    lam = 1.0 - k
    x1 = np.exp(-lam * t)
    x2 = k * (np.exp(-lam * t) - np.exp(-100.0 * t)) / (100.0 - lam)
    return np.stack([x1, x2], axis=1)


def singular() -> DAESystem:
    """0 = z^2 + 1 has no real solution: every algebraic solve must fail."""
    return DAESystem(
        name="singular",
        state_names=("x",),
        alg_names=("z",),
        f=lambda x, z, p: -x,
        g=lambda x, z, p: z**2 + 1.0 + 0.0 * x,
        x0=np.array([1.0]),
        z0=np.array([0.0]),
        params={"unused": np.array(0.0)},
    )


def prothero_robinson(lam: float = -1e4) -> DAESystem:
    """Prothero-Robinson y' = lam (y - sin tau) + cos tau, tau' = 1, written as a DAE with the
    forcing sin(tau) as algebraic variable. Exact solution from y(0) = 0: y = sin t."""

    def f(x, z, p):
        return jnp.stack([p["lam"] * (x[0] - z[0]) + jnp.cos(x[1]), jnp.ones(())])

    def g(x, z, p):
        return jnp.stack([z[0] - jnp.sin(x[1])])

    return DAESystem(
        name="prothero_robinson",
        state_names=("y", "tau"),
        alg_names=("s",),
        f=f,
        g=g,
        x0=np.array([0.0, 0.0]),
        z0=np.array([0.0]),
        params={"lam": np.array(lam)},
    )


STIFF_MATRIX = np.array([[-1.0, 0.5, 0.0], [0.0, -20.0, 5.0], [0.0, 0.0, -2000.0]])
"""A non-normal stiff matrix: eigenvalues -1, -20, -2000."""


def linear_stiff() -> DAESystem:
    """x' = A x with ``STIFF_MATRIX`` (and a trivial algebraic variable z = x_1): the exact
    solution is expm(A t) x0."""
    a = jnp.asarray(STIFF_MATRIX)
    return DAESystem(
        name="linear_stiff",
        state_names=("x1", "x2", "x3"),
        alg_names=("z",),
        f=lambda x, z, p: a @ x,
        g=lambda x, z, p: jnp.stack([z[0] - x[0]]),
        x0=np.array([1.0, 1.0, 1.0]),
        z0=np.array([1.0]),
        params={"unused": np.array(0.0)},
    )


def robertson() -> DAESystem:
    """Robertson's chemical kinetics (H. H. Robertson, "The solution of a set of reaction rate
    equations", in Numerical Analysis: An Introduction, Academic Press 1966, pp. 178-182), in the
    index-1 DAE form of the Hairer-Wanner stiff test set (Solving ODEs II, IV.10, problem ROBER):

        y1' = -0.04 y1 + 1e4 y2 y3,   y2' = 0.04 y1 - 1e4 y2 y3 - 3e7 y2^2,   0 = y1 + y2 + y3 - 1

    from y = (1, 0, 0). Stiff (eigenvalues down to about -1e4 early and -1e4 y3 - 6e7 y2 later),
    with y2 rising to 3.6e-5 within 1e-2 time units and every component evolving over decades
    of time up to t = 1e11."""

    def f(x, z, p):
        y1, y2, y3 = x[0], x[1], z[0]
        reaction = p["k3"] * y2 * y3
        return jnp.stack([-p["k1"] * y1 + reaction, p["k1"] * y1 - reaction - p["k2"] * y2**2])

    def g(x, z, p):
        return jnp.stack([x[0] + x[1] + z[0] - 1.0])

    return DAESystem(
        name="robertson",
        state_names=("y1", "y2"),
        alg_names=("y3",),
        f=f,
        g=g,
        x0=np.array([1.0, 0.0]),
        z0=np.array([0.0]),
        params={"k1": np.array(0.04), "k2": np.array(3e7), "k3": np.array(1e4)},
    )
