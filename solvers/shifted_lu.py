"""Factorizations of the shifted DAE matrices E - c J inside compiled code, dense or sparse KLU.

Implicit collocation methods on x' = f(x, z), 0 = g(x, z) solve systems with E - c J,
E = diag(1 on x, 0 on z), J the unreduced Jacobian (``models.sparsity``), for a few (possibly
complex) shifts c = h * lambda at a time, and with the algebraic block g_z. Both backends here
are JAX-traceable, so a whole method step compiles into one executable:

* ``DenseLinalg``: LAPACK ``getrf``/``getrs`` on the densified matrices (vmapped over shifts):
  cheapest for small systems, where a sparse solver's bookkeeping costs more than the flops.
* ``KluLinalg``: KLU (SuiteSparse, through ``klujax``'s XLA custom calls). The symbolic analysis
  (block triangular form, fill-reducing ordering) depends only on the pattern, so it is done
  once per ``JacobianStructure`` and process; the numeric factorizations are *refactorizations*
  in place into handles allocated once (passed to the compiled code as arguments, so the
  executable holds no pointer and can be cached across processes). Measured on IEEE 118
  (843 unknowns, 4,409 entries, complex): 0.16 ms per numeric factorization with the analysis
  reused, against 0.6 ms for SciPy's SuperLU (which re-orders on every call) and 27 ms for a
  dense complex LU. A refactorization happens before every solve that uses it through a data
  dependency (the solve takes the handles the refactorization returns). The handles are state:
  one compiled call at a time per ``KluLinalg`` (``lock``).

``choose_backend`` picks by size (overridable): dense up to ``DENSE_MAX_N`` unknowns. Both
solve the same systems, so results agree to round-off.

``AlgebraicLU`` factorizes g_z on the host (SciPy) for the spectral-radius estimate of the
reduced Jacobian f_x - f_z g_z^-1 g_x and for the robust algebraic fallbacks.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from jax.scipy.linalg import lu_factor, lu_solve

from models.sparsity import JacobianStructure

Backend = Literal["dense", "sparse"]
DENSE_MAX_N = 200
"""Largest n_x + n_z factored dense by default (``choose_backend``; docs/raptor.md has the
measurements behind it)."""


def choose_backend(structure: JacobianStructure, requested: str = "auto") -> Backend:
    """``requested`` unless it is ``auto``: then dense up to DENSE_MAX_N unknowns, else sparse."""
    if requested in ("dense", "sparse"):
        return requested  # type: ignore[return-value]
    if requested != "auto":
        raise ValueError(f"linear_solver must be 'auto', 'dense' or 'sparse', not {requested!r}")
    return "dense" if structure.n <= DENSE_MAX_N else "sparse"


class _Pattern:
    """Index arrays of the full pattern, E's diagonal and the g_z sub-block."""

    def __init__(self, structure: JacobianStructure) -> None:
        n_x = structure.n_x
        self.n, self.n_x, self.n_z = structure.n, n_x, structure.n_z
        self.rows, self.cols = structure.rows, structure.cols
        self.x_diagonal = structure.x_diagonal
        in_gz = (structure.rows >= n_x) & (structure.cols >= n_x)
        self.gz_entries = np.flatnonzero(in_gz)
        self.gz_rows = structure.rows[in_gz] - n_x
        self.gz_cols = structure.cols[in_gz] - n_x

    def shifted(self, vals, shifts):
        """Entries of E - c J for every c: (len(shifts), nnz), traceable."""
        out = -shifts[:, None] * vals[None, :].astype(shifts.dtype)
        return out.at[:, self.x_diagonal].add(1.0)


class DenseLinalg:
    """LAPACK on densified matrices; no state (``handles`` is empty)."""

    backend: Backend = "dense"

    def __init__(self, structure: JacobianStructure, n_slots: int) -> None:
        self.pattern = _Pattern(structure)
        # no state to protect: runs share it freely (several suspended in one thread when
        # solved together, ``solvers.raptor.batch``)
        self.lock = contextlib.nullcontext()

    def handles(self) -> dict:
        return {}

    def _dense(self, values, n, rows, cols):
        return jnp.zeros(values.shape[:-1] + (n, n), values.dtype).at[..., rows, cols].set(values)

    def factor_shifted(self, vals, shifts, handles, which: str):
        pat = self.pattern
        mats = self._dense(pat.shifted(vals, shifts), pat.n, pat.rows, pat.cols)
        return jax.vmap(lu_factor)(mats)

    def solve_shifted(self, factors, rhs):
        """rhs (S, n, k) -> (S, n, k)."""
        return jax.vmap(lambda lu, piv, b: lu_solve((lu, piv), b))(factors[0], factors[1], rhs)

    def factor_algebraic(self, vals, handles):
        pat = self.pattern
        return lu_factor(self._dense(vals[pat.gz_entries], pat.n_z, pat.gz_rows, pat.gz_cols))

    def solve_algebraic(self, factors, rhs):
        """rhs (n_z, k) -> (n_z, k)."""
        return lu_solve(factors, rhs)

    def kept_factors(self, handles, kept):
        """The factorizations of the previous attempt: dense ones are values, passed back in."""
        return kept


class KluLinalg:
    """KLU refactorizations into handles allocated once per structure and slot count."""

    backend: Backend = "sparse"

    def __init__(self, structure: JacobianStructure, n_slots: int) -> None:
        import klujax

        self._klu = klujax
        self.pattern = pat = _Pattern(structure)
        self.lock = threading.Lock()
        self.rows = jnp.asarray(pat.rows, jnp.int32)
        self.cols = jnp.asarray(pat.cols, jnp.int32)
        self.gz_rows = jnp.asarray(pat.gz_rows, jnp.int32)
        self.gz_cols = jnp.asarray(pat.gz_cols, jnp.int32)
        self.symbolic = klujax.analyze(self.rows, self.cols, pat.n)
        self.gz_symbolic = klujax.analyze(self.gz_rows, self.gz_cols, pat.n_z)
        # numeric handles, allocated once by factorizing regular matrices of each kind: E - c J
        # and g_z at the system's equilibrium (refactored in place by every attempt)
        jac0 = np.asarray(structure.values(structure.x0, structure.z0, structure.p0))
        example = np.asarray(structure.shifted(jac0, np.array([1e-3])))
        self._numeric = {
            "slots": klujax.factor(
                self.rows,
                self.cols,
                jnp.asarray(np.repeat(example, n_slots, 0).astype(complex)),
                self.symbolic,
            ),
            "filter": klujax.factor(self.rows, self.cols, jnp.asarray(example), self.symbolic),
            "gz": klujax.factor(
                self.gz_rows,
                self.gz_cols,
                jnp.asarray(jac0[pat.gz_entries]),
                self.gz_symbolic,
            ),
        }
        self.analyses = 2
        self.repivots = 0
        self._retired: list[dict] = []

    def repivot(self, vals: np.ndarray, slot_shifts: np.ndarray, h: float) -> None:
        """Fresh numeric factorizations (new pivot order) of the slots, the filter and g_z at
        these Jacobian values, replacing the handles (the old ones are kept, see below). A
        refactorization keeps the pivot order of the matrix the handle was made
        from; when entries it pivoted on become zero (a generator trip zeroes its machine's
        network coupling) KLU reports the refactorization singular although the matrix is not.
        Raises (klujax's error) when a matrix is singular with any pivoting."""
        klu, pat = self._klu, self.pattern
        jv = jnp.asarray(vals)
        slots = pat.shifted(jv, jnp.asarray(slot_shifts, complex))
        # the old handles stay alive: compiled code of other configurations may still hold
        # their raw pointers (``handles``), which must not dangle
        self._retired.append(self._numeric)
        self._numeric = {
            "slots": klu.factor(self.rows, self.cols, slots, self.symbolic),
            "filter": klu.factor(
                self.rows, self.cols, pat.shifted(jv, jnp.array([h])), self.symbolic
            ),  # fmt: skip
            "gz": klu.factor(self.gz_rows, self.gz_cols, jv[pat.gz_entries], self.gz_symbolic),
        }
        self.repivots += 1

    def handles(self) -> dict[str, Any]:
        """The raw handles as arrays (arguments of the compiled code)."""
        out = {k: jnp.array(v.as_list(), dtype=jnp.uint64) for k, v in self._numeric.items()}
        out["symbolic"] = jnp.array(self.symbolic.raw, dtype=jnp.uint64)
        out["gz_symbolic"] = jnp.array(self.gz_symbolic.raw, dtype=jnp.uint64)
        return out

    def factor_shifted(self, vals, shifts, handles, which: str):
        """Refactor in place the ``slots`` (complex shifts) or the ``filter`` (one real shift)."""
        values = self.pattern.shifted(vals, shifts)
        num = self._klu._refactor_jit(
            self.rows, self.cols, values, handles["symbolic"], handles[which]
        )
        return (num, handles["symbolic"])

    def solve_shifted(self, factors, rhs):
        num, sym = factors
        return self._klu._solve_with_numeric_jit(num, rhs, sym).reshape(rhs.shape)

    def factor_algebraic(self, vals, handles):
        num = self._klu._refactor_jit(
            self.gz_rows,
            self.gz_cols,
            vals[self.pattern.gz_entries][None, :],
            handles["gz_symbolic"],
            handles["gz"],
        )
        return (num, handles["gz_symbolic"])

    def solve_algebraic(self, factors, rhs):
        num, sym = factors
        return self._klu._solve_with_numeric_jit(num, rhs[None], sym).reshape(rhs.shape)

    def kept_factors(self, handles, kept):
        """The factorizations of the previous attempt: still in the handles (refactored in
        place), so ``kept`` is unused."""
        return (
            (handles["slots"], handles["symbolic"]),
            (handles["filter"], handles["symbolic"]),
            (handles["gz"], handles["gz_symbolic"]),
        )


def make_linalg(structure: JacobianStructure, backend: Backend, n_slots: int):
    return (DenseLinalg if backend == "dense" else KluLinalg)(structure, n_slots)


class AlgebraicLU:
    """g_z factorized on the host (dense LAPACK or SuperLU), with f_x, f_z, g_x kept for
    products with the reduced Jacobian."""

    def __init__(self, structure: JacobianStructure, jac_values: np.ndarray, backend: Backend):
        n_x = structure.n_x
        full = structure.csc(np.asarray(jac_values, dtype=float)).tocsr()
        self.f_x, self.f_z = full[:n_x, :n_x], full[:n_x, n_x:]
        self.g_x = full[n_x:, :n_x]
        g_z = full[n_x:, n_x:]
        self.dense = backend == "dense"
        self._reduced: np.ndarray | None = None
        if self.dense:
            lu = sla.lu_factor(g_z.toarray(), check_finite=False)
            self._solve = lambda b: sla.lu_solve(lu, b, check_finite=False)
        else:
            lu = spla.splu(sp.csc_matrix(g_z))
            self._solve = lu.solve

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """g_z^-1 rhs for rhs of shape (n_z,) or (n_z, k)."""
        return self._solve(np.asarray(rhs, dtype=float))

    def reduced_matvec(self, v: np.ndarray) -> np.ndarray:
        """(f_x - f_z g_z^-1 g_x) v for v of shape (n_x, k): the reduced (ODE) Jacobian applied
        without forming it on large systems (it fills in)."""
        if self.dense:  # small systems: the reduced matrix is cheaper to apply than 3 products
            if self._reduced is None:  # formed on first use only (Newton solves never use it)
                self._reduced = self.f_x.toarray() - self.f_z @ self._solve(self.g_x.toarray())
            return self._reduced @ v
        return self.f_x @ v - self.f_z @ self.solve(self.g_x @ v)
