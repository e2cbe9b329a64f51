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


def column_colors(rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """Column colours for forward-mode compression (asdex: columns of one colour share no
    row), so one JVP per colour recovers every entry."""
    import asdex

    pattern = asdex.SparsityPattern.from_coo(rows.astype(np.int32), cols.astype(np.int32), (n, n))
    with warnings.catch_warnings():  # small dense systems: as many colours as columns is fine
        warnings.simplefilter("ignore", asdex.DenseColoringWarning)
        colored = asdex.jacobian_coloring_from_sparsity(pattern, mode="fwd")
    return np.asarray(colored.colors, dtype=np.int64)


def colored_jacobian(fun, n_in: int, rows, cols, colors: np.ndarray, n_colors: int):
    """``values(w, *args) -> (nnz,)``: the entries (``rows``, ``cols``) of d fun(w, *args) / dw
    by Curtis-Powell-Reid compression: one JVP per column colour (``colors``, per column of w),
    then a gather. The one coloured-Jacobian kernel of the project (the unreduced J here, g_z
    and the reduced J of ``models.kernels``)."""
    rows, cols, colors = (np.asarray(a, dtype=np.int64) for a in (rows, cols, colors))
    seeds = np.zeros((n_colors, n_in))
    seeds[colors, np.arange(n_in)] = 1.0
    seeds_j = jnp.asarray(seeds)
    gather_color = jnp.asarray(colors[cols])
    gather_row = jnp.asarray(rows)

    def values(w, *args):
        compressed = jax.vmap(lambda s: jax.jvp(lambda v: fun(v, *args), (w,), (s,))[1])(seeds_j)
        return compressed[gather_color, gather_row]

    return values


def _values_fn(
    system: DAESystem, rows: np.ndarray, cols: np.ndarray, colors: np.ndarray, n_colors: int
):
    """``values(x, z, p) -> (nnz,)``: one JVP per colour (``colors`` per column), then a gather
    of the entries (``rows``, ``cols``)."""
    compressed = colored_jacobian(
        _residual(system), system.n_x + system.n_z, rows, cols, colors, n_colors
    )

    def values(x, z, p):
        return compressed(jnp.concatenate([x, z]), p)

    return values


_CACHE: weakref.WeakKeyDictionary[DAESystem, JacobianStructure] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def csc_pattern(
    rows: np.ndarray, cols: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The n x n structural pattern of the (row, col) entries (repeats merged) in CSC order:
    ``indptr``, ``indices`` (row of each entry) and the column of each entry."""
    pattern = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    pattern.sum_duplicates()
    pattern.sort_indices()
    indptr = pattern.indptr.astype(np.int64)
    return indptr, pattern.indices.astype(np.int64), np.repeat(np.arange(n), np.diff(indptr))


def _analyse(system: DAESystem) -> dict[str, np.ndarray]:
    """Pattern (CSC), column colours and diagonal positions of the system's J."""
    rows, cols = _pattern(system)
    n = system.n_x + system.n_z
    indptr, indices, col_of_entry = csc_pattern(rows, cols, n)
    diagonal = np.empty(n, dtype=np.int64)
    for j in range(n):
        lo, hi = indptr[j], indptr[j + 1]
        diagonal[j] = lo + int(np.searchsorted(indices[lo:hi], j))
    return {
        "indptr": indptr,
        "indices": indices,
        "colors": column_colors(indices, col_of_entry, n),
        "diagonal": diagonal,
    }


def jacobian_pattern(system: DAESystem) -> dict[str, np.ndarray]:
    """CSC pattern (``indptr``, ``indices``), column ``colors`` and ``diagonal`` positions of the
    system's unreduced J, from the executable store when another process found them."""
    from models.executables import load_or_compute

    return load_or_compute(system, ("jacobian pattern",), lambda: _analyse(system))


def jacobian_structure(system: DAESystem) -> tuple[JacobianStructure, float, float]:
    """The system's ``JacobianStructure`` and the seconds this call spent compiling and loading
    (0, 0 when cached in the process). The pattern and the compiled value kernel come from the
    executable store when another process built them (``models.executables``)."""
    from models.executables import load_or_compile

    with _LOCK:
        cached = _CACHE.get(system)
        if cached is not None:
            return cached, 0.0, 0.0
        start = time.perf_counter()
        arrays = jacobian_pattern(system)
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


REDUCED_MAX_DENSITY = 0.1
"""The reduced Jacobian f_x - f_z g_z^-1 g_x is taken by colouring its own pattern when that
pattern holds at most this fraction of n_x^2 entries (dq networks: 0.6 % on dq_ieee118, whose
algebraic variables couple in 54 small groups); above it (RMS networks: eliminating the network
fills it in) from the coloured unreduced J and a dense elimination."""


@dataclass(frozen=True, eq=False)
class ReducedPattern:
    """What the reduced kernels (``models.kernels``) take their Jacobians with, derived from the
    unreduced pattern of ``jacobian_pattern`` (one pattern and one colouring per system).

    ``rows``/``cols``/``colors``/``n_colors``: the unreduced J over w = (x, z), as in
    ``JacobianStructure``. ``gz_rows``/``gz_cols``/``gz_colors``/``gz_n_colors``: the g_z block
    (z numbering) and its own column colouring. ``red_*``: the structural pattern of the
    reduced J in CSC order (f_x, plus f_z B g_x where B is g_z^-1's structural over-estimate:
    full within each connected group of algebraic variables) and its colouring; ``red_indptr``
    is None when that pattern is denser than ``REDUCED_MAX_DENSITY``.
    """

    n_x: int
    n_z: int
    rows: np.ndarray
    cols: np.ndarray
    colors: np.ndarray
    n_colors: int
    gz_rows: np.ndarray
    gz_cols: np.ndarray
    gz_colors: np.ndarray
    gz_n_colors: int
    red_indptr: np.ndarray | None
    red_indices: np.ndarray | None
    red_cols: np.ndarray | None
    red_colors: np.ndarray | None
    red_n_colors: int

    @property
    def reduced_sparse(self) -> bool:
        return self.red_indptr is not None

    @property
    def red_nnz(self) -> int:
        return 0 if self.red_indices is None else int(self.red_indices.size)

    def reduced_csc(self, data: np.ndarray) -> sp.csc_matrix:
        """The reduced J with entries ``data`` (CSC order of the reduced pattern)."""
        return sp.csc_matrix(
            (np.asarray(data), self.red_indices, self.red_indptr), shape=(self.n_x, self.n_x)
        )

    def reduced_dense(self, data: np.ndarray) -> np.ndarray:
        out = np.zeros((self.n_x, self.n_x))
        out[self.red_indices, self.red_cols] = data
        return out


def _analyse_reduced(system: DAESystem, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from scipy.sparse.csgraph import connected_components

    n_x, n_z = system.n_x, system.n_z
    n = n_x + n_z
    indptr, indices = arrays["indptr"], arrays["indices"]
    ones = np.ones(indices.size)
    pattern = sp.csc_matrix((ones, indices, indptr), shape=(n, n)).tocsr()
    f_x, f_z = pattern[:n_x, :n_x], pattern[:n_x, n_x:]
    g_x, g_z = pattern[n_x:, :n_x], pattern[n_x:, n_x:].tocoo()
    out: dict[str, np.ndarray] = {}
    gz_rows, gz_cols = g_z.row.astype(np.int64), g_z.col.astype(np.int64)
    out["gz_rows"], out["gz_cols"] = gz_rows, gz_cols
    out["gz_colors"] = column_colors(gz_rows, gz_cols, n_z) if n_z else np.zeros(0, np.int64)
    # g_z^-1 is block diagonal over the (weakly) connected groups of algebraic variables
    n_groups, group = connected_components(g_z, directed=False) if n_z else (0, np.zeros(0))
    member = sp.csr_matrix((np.ones(n_z), (np.arange(n_z), group)), shape=(n_z, n_groups))
    touched_rows = (f_z @ member).tocsc()  # x rows reading each group
    touched_cols = (member.T @ g_x).tocsr()  # x columns each group depends on
    bound = f_x.nnz + int(np.dot(np.diff(touched_rows.indptr), np.diff(touched_cols.indptr)))
    if bound > REDUCED_MAX_DENSITY * n_x * n_x:
        return out
    reduced = (f_x + touched_rows @ touched_cols).tocsc()
    reduced.sum_duplicates()
    reduced.sort_indices()
    red_indptr = reduced.indptr.astype(np.int64)
    red_indices = reduced.indices.astype(np.int64)
    red_cols = np.repeat(np.arange(n_x), np.diff(red_indptr))
    out.update(
        red_indptr=red_indptr,
        red_indices=red_indices,
        red_colors=column_colors(red_indices, red_cols, n_x),
    )
    return out


_REDUCED: weakref.WeakKeyDictionary[DAESystem, ReducedPattern] = weakref.WeakKeyDictionary()


def reduced_pattern(system: DAESystem) -> ReducedPattern:
    """The system's ``ReducedPattern`` (cached in the process and in the executable store)."""
    from models.executables import load_or_compute

    with _LOCK:
        cached = _REDUCED.get(system)
        if cached is not None:
            return cached
    arrays = jacobian_pattern(system)
    extra = load_or_compute(
        system, ("reduced jacobian pattern",), lambda: _analyse_reduced(system, arrays)
    )
    n = system.n_x + system.n_z
    indptr = arrays["indptr"]
    red_indptr = extra.get("red_indptr")
    red_colors = extra.get("red_colors")
    pattern = ReducedPattern(
        n_x=system.n_x,
        n_z=system.n_z,
        rows=arrays["indices"],
        cols=np.repeat(np.arange(n), np.diff(indptr)),
        colors=arrays["colors"],
        n_colors=int(arrays["colors"].max()) + 1 if n else 0,
        gz_rows=extra["gz_rows"],
        gz_cols=extra["gz_cols"],
        gz_colors=extra["gz_colors"],
        gz_n_colors=int(extra["gz_colors"].max()) + 1 if system.n_z else 0,
        red_indptr=red_indptr,
        red_indices=extra.get("red_indices"),
        red_cols=None
        if red_indptr is None
        else np.repeat(np.arange(system.n_x), np.diff(red_indptr)),
        red_colors=red_colors,
        red_n_colors=int(red_colors.max()) + 1 if red_colors is not None and system.n_x else 0,
    )
    with _LOCK:
        _REDUCED[system] = pattern
    return pattern
