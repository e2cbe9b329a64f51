"""LU factorizations of shifted DAE matrices E - c J, dense or sparse, for a batch of shifts.

Implicit collocation methods on x' = f(x, z), 0 = g(x, z) solve systems with the matrices
E - c J, E = diag(1 on x, 0 on z), J the unreduced Jacobian (``models.sparsity``), for a few
(possibly complex) shifts c = h * lambda at a time. Two backends factor them:

* ``dense``: LAPACK ``getrf`` through SciPy, one matrix at a time: cheapest for small systems,
  where a sparse solver's bookkeeping costs more than the O(n^3) flops.
* ``sparse``: KLU (SuiteSparse, through ``klujax``). The symbolic analysis (block triangular
  form and fill-reducing ordering) depends only on the pattern, so it is done once per
  ``JacobianStructure`` and every numeric factorization reuses it; a batch of shifts is factored
  and solved in one call. Measured on IEEE 118 (843 unknowns, 4,409 entries, complex):
  0.16 ms per numeric factorization with the analysis reused, against 0.6 ms for SciPy's
  SuperLU (which re-orders on every call: its API exposes no symbolic reuse) and 27 ms for a
  dense complex LU of the same matrix.

``choose_backend`` picks by size (overridable): the dense path up to ``DENSE_MAX_N`` unknowns.
Both backends solve the same systems, so results agree to round-off.

The algebraic block g_z gets its own factorization (``AlgebraicLU``) for the simplified Newton
iterations that keep z consistent with x (interval ends, checkpoints, dense output) and for the
spectral-radius estimate of the reduced Jacobian f_x - f_z g_z^-1 g_x.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from models.sparsity import JacobianStructure

Backend = Literal["dense", "sparse"]
DENSE_MAX_N = 200
"""Largest n_x + n_z factored dense by default (``choose_backend``): measured per RAPTOR attempt
on this project's cases, the dense path wins below ~200 unknowns (wscc9: 45, ieee14: 81) and
KLU above (ieee39: 261, ieee118: 843; see docs/raptor.md)."""


def choose_backend(structure: JacobianStructure, requested: str = "auto") -> Backend:
    """``requested`` unless it is ``auto``: then dense up to DENSE_MAX_N unknowns, else sparse."""
    if requested in ("dense", "sparse"):
        return requested  # type: ignore[return-value]
    if requested != "auto":
        raise ValueError(f"linear_solver must be 'auto', 'dense' or 'sparse', not {requested!r}")
    return "dense" if structure.n <= DENSE_MAX_N else "sparse"


class ShiftedFactors:
    """Factorizations of a batch of matrices with the structure's pattern; ``solve`` takes
    right-hand sides shaped (batch, n, k) and returns solutions of the same shape."""

    def solve(self, rhs: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


class _DenseFactors(ShiftedFactors):
    def __init__(self, structure: JacobianStructure, values: np.ndarray) -> None:
        self.lus = [
            sla.lu_factor(structure.dense(row), check_finite=False, overwrite_a=True)
            for row in values
        ]

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return np.stack(
            [sla.lu_solve(lu, b, check_finite=False) for lu, b in zip(self.lus, rhs, strict=True)]
        )


class _KluFactors(ShiftedFactors):
    def __init__(self, kernel: _KluKernel, values: np.ndarray) -> None:
        self.kernel = kernel
        self.dtype = values.dtype
        self.numeric = kernel.factor(values)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return self.kernel.solve(self.numeric, rhs.astype(self.dtype, copy=False))


class _KluKernel:
    """KLU's symbolic analysis of one pattern, shared by every numeric factorization."""

    def __init__(self, structure: JacobianStructure) -> None:
        import jax.numpy as jnp
        import klujax

        self._klu = klujax
        self.rows = jnp.asarray(structure.rows, jnp.int32)
        self.cols = jnp.asarray(structure.cols, jnp.int32)
        self.symbolic = klujax.analyze(self.rows, self.cols, structure.n)

    def factor(self, values: np.ndarray):
        return self._klu.factor(self.rows, self.cols, values, self.symbolic)

    def solve(self, numeric, rhs: np.ndarray) -> np.ndarray:
        return np.asarray(self._klu.solve_with_numeric(numeric, rhs, self.symbolic))


class ShiftedLU:
    """Factors E - c J for batches of shifts c with the chosen backend; counts the numeric
    factorizations (``factorizations``) and symbolic analyses (``analyses``)."""

    def __init__(self, structure: JacobianStructure, backend: Backend) -> None:
        self.structure, self.backend = structure, backend
        self._klu: _KluKernel | None = None
        self.analyses = 0
        self.factorizations = 0

    def factor(self, jac_values: np.ndarray, shifts: np.ndarray) -> ShiftedFactors:
        """Factorizations of E - c J for every c in ``shifts`` (complex when any c is)."""
        shifts = np.asarray(shifts)
        values = self.structure.shifted(jac_values, shifts)
        self.factorizations += len(shifts)
        if self.backend == "dense":
            return _DenseFactors(self.structure, values)
        if self._klu is None:
            self._klu = _KluKernel(self.structure)
            self.analyses += 1
        return _KluFactors(self._klu, values)


class AlgebraicLU:
    """The factorized algebraic block g_z of a Jacobian (dense LAPACK or SuperLU), with the
    blocks f_x, f_z, g_x kept for products with the reduced Jacobian."""

    def __init__(self, structure: JacobianStructure, jac_values: np.ndarray, backend: Backend):
        n_x = structure.n_x
        full = structure.csc(np.asarray(jac_values, dtype=float)).tocsr()
        self.f_x, self.f_z = full[:n_x, :n_x], full[:n_x, n_x:]
        self.g_x = full[n_x:, :n_x]
        g_z = full[n_x:, n_x:]
        self._reduced: np.ndarray | None = None
        if backend == "dense":
            lu = sla.lu_factor(g_z.toarray(), check_finite=False)
            self._solve = lambda b: sla.lu_solve(lu, b, check_finite=False)
            # small systems: the reduced matrix itself is cheaper to apply than three products
            self._reduced = self.f_x.toarray() - self.f_z @ self._solve(self.g_x.toarray())
        else:
            lu = spla.splu(sp.csc_matrix(g_z))
            self._solve = lu.solve

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """g_z^-1 rhs for rhs of shape (n_z,) or (n_z, k)."""
        return self._solve(np.asarray(rhs, dtype=float))

    def reduced_matvec(self, v: np.ndarray) -> np.ndarray:
        """(f_x - f_z g_z^-1 g_x) v for v of shape (n_x, k): the reduced (ODE) Jacobian applied
        without forming it on large systems (it fills in)."""
        if self._reduced is not None:
            return self._reduced @ v
        return self.f_x @ v - self.f_z @ self.solve(self.g_x @ v)
