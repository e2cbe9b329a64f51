"""The sparse Jacobian of a DAE's unreduced residual, structure found once per system.

For the semi-explicit DAE x' = f(x, z, p), 0 = g(x, z, p) the unreduced Jacobian over
w = (x, z) is

    J = [[f_x, f_z],
         [g_x, g_z]]          (n_x + n_z square)

Power networks make it very sparse (IEEE 118: 4,349 structural non-zeros of 843², 0.6 %),
while eliminating z (f_x - f_z g_z^-1 g_x) fills it in. So every method that needs a Jacobian
of a large network takes it from here, in compressed sparse column (CSC) form:

* the *structural* pattern is detected once per system from the traced computation graph
  (``asdex``: global sparsity detection on the jaxpr, valid for every input and parameter
  value), with the full diagonal added so that E - c J (E = diag(1 on x, 0 on z)) has a
  fixed pattern for every shift c;
* the columns are coloured (asdex; no two columns of one colour share a row), so one Jacobian
  costs one JVP per colour (23 on IEEE 118) instead of one per unknown, and the entries are
  read off the compressed products by a gather (Curtis-Powell-Reid compression);
* the value kernel is compiled once per system (shapes and the pattern never change between
  scenarios: a tripped branch or a fault is a parameter value, the pattern keeps its entry).
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem


@dataclass(frozen=True, eq=False)
class JacobianStructure:
    """Pattern, colouring and compiled value kernel of one system's unreduced Jacobian.

    ``indptr``/``indices`` are the CSC arrays of the pattern (sorted rows within each column);
    ``rows``/``cols`` the same entries as coordinate lists. ``values(x, z, p)`` returns the
    ``nnz`` entries in that order. ``diagonal`` holds the position of every diagonal entry and
    ``x_diagonal`` those of the first ``n_x`` (the positions of E's ones). ``x0``, ``z0``,
    ``p0`` are the system's equilibrium and parameters, where J is known to be regular.
    """

    n_x: int
    n_z: int
    indptr: np.ndarray
    indices: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    colors: np.ndarray
    n_colors: int
    diagonal: np.ndarray
    values: Any
    x0: np.ndarray
    z0: np.ndarray
    p0: dict
    detect_seconds: float
    compile_seconds: float

    @property
    def n(self) -> int:
        return self.n_x + self.n_z

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    @property
    def density(self) -> float:
        return self.nnz / float(self.n * self.n)

    @property
    def x_diagonal(self) -> np.ndarray:
        return self.diagonal[: self.n_x]

    def csc(self, data: np.ndarray) -> sp.csc_matrix:
        """The CSC matrix with this pattern and entries ``data`` (no copy of the index arrays)."""
        return sp.csc_matrix((data, self.indices, self.indptr), shape=(self.n, self.n))

    def dense(self, data: np.ndarray) -> np.ndarray:
        out = np.zeros((self.n, self.n), dtype=np.asarray(data).dtype)
        out[self.rows, self.cols] = data
        return out

    def shifted(self, data: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        """Entries of E - c J for every shift c in ``shifts``: shape (len(shifts), nnz)."""
        shifts = np.asarray(shifts)
        out = -shifts[:, None] * np.asarray(data)[None, :]
        out[:, self.x_diagonal] += 1.0
        return out


def _residual(system: DAESystem):
    n_x = system.n_x

    def fg(w, p):
        return jnp.concatenate([system.f(w[:n_x], w[n_x:], p), system.g(w[:n_x], w[n_x:], p)])

    return fg


def _pattern(system: DAESystem) -> tuple[np.ndarray, np.ndarray]:
    """Structural (row, col) entries of J plus the diagonal, from the jaxpr (asdex)."""
    import asdex

    fg = _residual(system)
    p = {k: jnp.asarray(v, jnp.float64) for k, v in system.params.items()}
    w0 = jnp.concatenate([jnp.asarray(system.x0, jnp.float64), jnp.asarray(system.z0)])
    pattern = asdex.jacobian_sparsity(lambda w: fg(w, p), w0)
    n = system.n_x + system.n_z
    rows = np.concatenate([np.asarray(pattern.rows, np.int64), np.arange(n)])
    cols = np.concatenate([np.asarray(pattern.cols, np.int64), np.arange(n)])
    return rows, cols


def _column_colors(rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """Column colours for forward-mode compression (asdex: columns of one colour share no
    row), so one JVP per colour recovers every entry."""
    import asdex

    pattern = asdex.SparsityPattern.from_coo(rows.astype(np.int32), cols.astype(np.int32), (n, n))
    with warnings.catch_warnings():  # small dense systems: as many colours as columns is fine
        warnings.simplefilter("ignore", asdex.DenseColoringWarning)
        colored = asdex.jacobian_coloring_from_sparsity(pattern, mode="fwd")
    return np.asarray(colored.colors, dtype=np.int64)


def _values_fn(
    system: DAESystem, rows: np.ndarray, cols: np.ndarray, colors: np.ndarray, n_colors: int
):
    """``values(x, z, p) -> (nnz,)``: one JVP per colour (``colors`` per column), then a gather
    of the entries (``rows``, ``cols``)."""
    fg = _residual(system)
    n = system.n_x + system.n_z
    seeds = np.zeros((n_colors, n))
    seeds[colors, np.arange(n)] = 1.0
    seeds_j = jnp.asarray(seeds)
    gather_color = jnp.asarray(colors[cols])
    gather_row = jnp.asarray(rows)

    def values(x, z, p):
        w = jnp.concatenate([x, z])
        compressed = jax.vmap(lambda s: jax.jvp(lambda v: fg(v, p), (w,), (s,))[1])(seeds_j)
        return compressed[gather_color, gather_row]

    return values


_CACHE: weakref.WeakKeyDictionary[DAESystem, JacobianStructure] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _analyse(system: DAESystem) -> dict[str, np.ndarray]:
    """Pattern (CSC), column colours and diagonal positions of the system's J."""
    rows, cols = _pattern(system)
    n = system.n_x + system.n_z
    pattern = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    pattern.sum_duplicates()
    pattern.sort_indices()
    indptr = pattern.indptr.astype(np.int64)
    indices = pattern.indices.astype(np.int64)
    col_of_entry = np.repeat(np.arange(n), np.diff(indptr))
    diagonal = np.empty(n, dtype=np.int64)
    for j in range(n):
        lo, hi = indptr[j], indptr[j + 1]
        diagonal[j] = lo + int(np.searchsorted(indices[lo:hi], j))
    return {
        "indptr": indptr,
        "indices": indices,
        "colors": _column_colors(indices, col_of_entry, n),
        "diagonal": diagonal,
    }


def jacobian_structure(system: DAESystem) -> tuple[JacobianStructure, float, float]:
    """The system's ``JacobianStructure`` and the seconds this call spent compiling and loading
    (0, 0 when cached in the process). The pattern and the compiled value kernel come from the
    executable store when another process built them (``models.executables``)."""
    from models.executables import load_or_compile, load_or_compute

    with _LOCK:
        cached = _CACHE.get(system)
        if cached is not None:
            return cached, 0.0, 0.0
        start = time.perf_counter()
        arrays = load_or_compute(system, ("jacobian pattern",), lambda: _analyse(system))
        indptr, indices, colors = arrays["indptr"], arrays["indices"], arrays["colors"]
        n = system.n_x + system.n_z
        col_of_entry = np.repeat(np.arange(n), np.diff(indptr))
        n_colors = int(colors.max()) + 1 if n else 0
        detected = time.perf_counter()
        x = jnp.asarray(system.x0, jnp.float64)
        z = jnp.asarray(system.z0, jnp.float64)
        p = {k: jnp.asarray(v, jnp.float64) for k, v in system.params.items()}
        executable, compile_s, load_s = load_or_compile(
            system,
            ("jacobian values",),
            lambda: _values_fn(system, indices, col_of_entry, colors, n_colors),
            (x, z, p),
        )
        structure = JacobianStructure(
            n_x=system.n_x,
            n_z=system.n_z,
            indptr=indptr,
            indices=indices,
            rows=indices.copy(),
            cols=col_of_entry,
            colors=colors,
            n_colors=n_colors,
            diagonal=arrays["diagonal"],
            values=executable,
            x0=np.asarray(system.x0, dtype=float),
            z0=np.asarray(system.z0, dtype=float),
            p0=p,
            detect_seconds=detected - start,
            compile_seconds=compile_s,
        )
        _CACHE[system] = structure
        # pattern detection counts as compiling (it traces the equations); loading does not
        return structure, compile_s + (0.0 if load_s else detected - start), load_s
