"""Evaluating an unreduced DAE: batched f and g, the sparse Jacobian, consistent z.

The unreduced methods (RAPTOR; see ``solvers.shifted_lu``) never eliminate z with a dense
Newton per call: they evaluate f and g at many points at once (one compiled, vmapped call per
batch shape), take the Jacobian from the system's ``JacobianStructure`` (one JVP per colour) and
solve for a consistent z by Newton on the sparse g_z (at segment starts, after events). Every
compile here is timed into ``compile_seconds``, apart from solving.
"""

from __future__ import annotations

import weakref

import jax
import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem, Params
from models.executables import load_or_compile
from models.kernels import as_device_params
from models.sparsity import JacobianStructure, jacobian_structure
from solvers.reduced import ALGEBRAIC_TOL, minpack_solve
from solvers.result import Stats
from solvers.shifted_lu import AlgebraicLU, Backend

NEWTON_MAX_ITER = 25
"""Cap on Newton iterations (fresh sparse Jacobian each) for a consistent z."""
STEP_TOL = 1e-12
"""Newton stops when its update is below this relative to max(1, |z|)."""


class PointKernels:
    """Compiled f, g and outputs of one system, batched over rows of (X, Z) (compiled once
    per batch size and cached; the seconds spent compiling accumulate in ``compile_seconds``)."""

    def __init__(self, system: DAESystem) -> None:
        self.system = system
        self.compile_seconds = 0.0
        self.load_seconds = 0.0
        self._fg: dict[int, object] = {}
        self._out: dict[int, object] = {}
        self._p = as_device_params(system.params)

    def _compile(self, role: str, fn, rows: int):
        x = jnp.zeros((rows, self.system.n_x))
        z = jnp.zeros((rows, self.system.n_z))
        executable, compile_s, load_s = load_or_compile(
            self.system, (role, rows), lambda: fn, (x, z, self._p)
        )
        self.compile_seconds += compile_s
        self.load_seconds += load_s
        return executable

    def fg(self, xs: np.ndarray, zs: np.ndarray, p) -> tuple[np.ndarray, np.ndarray]:
        """(F, G): f and g at every row of (xs, zs), shapes (rows, n_x) and (rows, n_z)."""
        rows = xs.shape[0]
        kernel = self._fg.get(rows)
        if kernel is None:
            system = self.system
            kernel = self._compile(
                "f and g",
                jax.vmap(lambda x, z, p: (system.f(x, z, p), system.g(x, z, p)), (0, 0, None)),
                rows,
            )
            self._fg[rows] = kernel
        return jax.device_get(kernel(xs, zs, p))

    def outputs(self, xs: np.ndarray, zs: np.ndarray, p) -> np.ndarray:
        """The named outputs at every row (rows, n_outputs)."""
        if self.system.outputs is None:
            return np.zeros((xs.shape[0], 0))
        rows = xs.shape[0]
        kernel = self._out.get(rows)
        if kernel is None:
            kernel = self._compile("outputs", jax.vmap(self.system.outputs, (0, 0, None)), rows)
            self._out[rows] = kernel
        return np.asarray(kernel(xs, zs, p))


_KERNELS: weakref.WeakKeyDictionary[DAESystem, PointKernels] = weakref.WeakKeyDictionary()


def point_kernels(system: DAESystem) -> PointKernels:
    kernels = _KERNELS.get(system)
    if kernels is None:
        kernels = _KERNELS[system] = PointKernels(system)
    return kernels


class DAEEvaluator:
    """f, g, the sparse Jacobian and consistent z for one parameter set (one segment)."""

    def __init__(
        self,
        system: DAESystem,
        params: Params,
        backend: Backend,
        stats: Stats,
        kernels: PointKernels | None = None,
        structure: JacobianStructure | None = None,
    ) -> None:
        self.system, self.backend, self.stats = system, backend, stats
        self.kernels = kernels or point_kernels(system)
        self.structure = structure or jacobian_structure(system)[0]
        self.p = as_device_params(params)

    def f(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        return self.kernels.fg(x[None], z[None], self.p)[0][0]

    def g(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        return self.kernels.fg(x[None], z[None], self.p)[1][0]

    def outputs(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        return self.kernels.outputs(x[None], z[None], self.p)[0]

    def jacobian_values(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Entries of J at (x, z) in the structure's order (one JVP per colour)."""
        self.stats.jacobian_evaluations += 1
        return np.asarray(self.structure.values(x, z, self.p))

    def algebraic_lu(self, values: np.ndarray) -> AlgebraicLU:
        """g_z of the Jacobian ``values`` factorized on the host."""
        self.stats.lu_factorizations += 1
        return AlgebraicLU(self.structure, values, self.backend)

    def consistent_z(self, x: np.ndarray, z_guess: np.ndarray) -> np.ndarray:
        """z with g(x, z) = 0 by Newton on the sparse g_z (a fresh Jacobian per iteration: after
        an event z may move far), falling back to MINPACK hybr/lm as ``ReducedODE`` does."""
        z = np.array(z_guess, dtype=float)
        for _ in range(NEWTON_MAX_ITER):
            g = self.g(x, z)
            self.stats.algebraic_iterations += 1
            if not np.all(np.isfinite(g)):
                break
            if np.max(np.abs(g), initial=0.0) <= 0.1 * ALGEBRAIC_TOL:
                return z
            dz = self.algebraic_lu(self.jacobian_values(x, z)).solve(g)
            z -= dz
            small = np.max(np.abs(dz)) <= STEP_TOL * max(1.0, float(np.max(np.abs(z))))
            if small and np.max(np.abs(self.g(x, z)), initial=0.0) <= ALGEBRAIC_TOL:
                return z
        return self._robust(x, np.asarray(z_guess, dtype=float))

    def _robust(self, x: np.ndarray, guess: np.ndarray) -> np.ndarray:
        n_x = self.system.n_x

        def jacobian(z: np.ndarray) -> np.ndarray:
            full = self.structure.csc(np.asarray(self.structure.values(x, z, self.p)))
            return full[n_x:, n_x:].toarray()

        return minpack_solve(lambda z: self.g(x, z), jacobian, guess, self.stats)
