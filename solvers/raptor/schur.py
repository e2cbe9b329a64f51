"""Dense block-Schur factorizations of RAPTOR's chord matrices, for vectorized runs on a GPU.

The attempt (``interval.make_attempt``) factorizes E - c J for a few complex shifts c, the real
E - h J and g_z. ``shifted_lu.DenseLinalg`` takes dense LUs of the whole n x n matrices (n = 843
on ieee118: 8.5 GFlop per attempt), ``KluLinalg`` keeps them sparse but is a host library that
cannot be vmapped. This backend is dense and vmappable but uses the structure of power-system
Jacobians: removing a small *interface* set of unknowns (the network's bus voltages) leaves many
small independent *local* blocks (one per machine: its states and stator currents), so

    [A_LL A_LN] [x_L]   [r_L]     S = A_NN - A_NL A_LL^-1 A_LN   (interface x interface)
    [A_NL A_NN] [x_N] = [r_N]     x_N = S^-1 (r_N - A_NL A_LL^-1 r_L)
                                  x_L = A_LL^-1 (r_L - A_LN x_N)

with A_LL block diagonal (batched small LUs) and one dense LU of S (ieee118: 118 interface
unknowns and 89 blocks of at most 15, so 5 complex LUs of 118 instead of 843). The interface
is chosen from the pattern alone (``choose_interface``: highest-degree unknowns until every
remaining component is at most ``MAX_BLOCK`` unknowns), so nothing here knows about buses.
Pivoting is partial within each local block and within S, none across them: exact in exact
arithmetic, and stable where the local blocks are well conditioned (a machine's I - c f_x and
its stator equations).

Same interface as ``DenseLinalg`` (``factor_shifted``, ``solve_shifted``, ``factor_algebraic``,
``solve_algebraic``, ``kept_factors``, ``pattern``), so the attempt is reused unchanged; results
agree with the dense backend to round-off (``tests/test_raptor_device.py``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.scipy.linalg import lu_factor, lu_solve
from scipy.sparse.csgraph import connected_components

from models.sparsity import JacobianStructure
from solvers.shifted_lu import Backend, _Pattern

MAX_BLOCK = 16
"""Largest local block (unknowns) ``choose_interface`` leaves: a machine with its exciter and
governor is 9-11 unknowns."""


def choose_interface(rows: np.ndarray, cols: np.ndarray, n: int, max_block: int = MAX_BLOCK):
    """Interface unknowns (sorted) of the symmetrized pattern: the fewest highest-degree unknowns
    (bisection on their count) whose removal leaves components of at most ``max_block``."""
    off = rows != cols
    graph = sp.coo_matrix((np.ones(off.sum()), (rows[off], cols[off])), shape=(n, n)).tocsr()
    graph = ((graph + graph.T) > 0).astype(np.int8).tocsr()
    degree = np.asarray(graph.sum(axis=1)).ravel()
    order = np.argsort(-degree, kind="stable")

    def largest(k: int) -> int:
        keep = np.ones(n, dtype=bool)
        keep[order[:k]] = False
        if not keep.any():
            return 0
        sub = graph[keep][:, keep]
        _, labels = connected_components(sub, directed=False)
        return int(np.bincount(labels).max())

    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if largest(mid) <= max_block:
            hi = mid
        else:
            lo = mid + 1
    return np.sort(order[:lo])


@dataclass(frozen=True)
class _Layout:
    """Index maps of one square pattern split into local blocks and an interface (static)."""

    n: int
    iface: np.ndarray  # (m,) interface unknowns
    local: np.ndarray  # (K, b) local unknowns per block, padded with n (dropped)
    nbr: np.ndarray  # (K, c) interface positions coupled to each block, padded with m
    ll: tuple[np.ndarray, ...]  # (entry, block, i, j) of A_LL entries
    ln: tuple[np.ndarray, ...]  # (entry, block, i, slot)
    nl: tuple[np.ndarray, ...]  # (entry, block, slot, j)
    nn: tuple[np.ndarray, ...]  # (entry, p, q)

    @property
    def m(self) -> int:
        return int(self.iface.size)


def _layout(rows: np.ndarray, cols: np.ndarray, n: int, iface: np.ndarray) -> _Layout:
    is_iface = np.zeros(n, dtype=bool)
    is_iface[iface] = True
    pos = np.full(n, -1)
    pos[iface] = np.arange(iface.size)
    loc = np.flatnonzero(~is_iface)
    off = rows != cols
    graph = sp.coo_matrix((np.ones(off.sum()), (rows[off], cols[off])), shape=(n, n)).tocsr()
    graph = (graph + graph.T).tocsr()
    _, labels = connected_components(graph[loc][:, loc], directed=False)
    n_blocks = int(labels.max()) + 1 if loc.size else 0
    members = [loc[labels == k] for k in range(n_blocks)]
    b = max((len(m) for m in members), default=1)
    block_of = np.full(n, -1)
    index_in = np.full(n, -1)
    local = np.full((max(n_blocks, 1), b), n)
    for k, mem in enumerate(members):
        local[k, : len(mem)] = mem
        block_of[mem] = k
        index_in[mem] = np.arange(len(mem))
    neighbours = [set() for _ in range(n_blocks)]
    for r, c in zip(rows, cols, strict=True):
        if block_of[r] >= 0 and is_iface[c]:
            neighbours[block_of[r]].add(int(pos[c]))
        if is_iface[r] and block_of[c] >= 0:
            neighbours[block_of[c]].add(int(pos[r]))
    width = max((len(s) for s in neighbours), default=1) or 1
    nbr = np.full((max(n_blocks, 1), width), iface.size)
    slot = {}
    for k, s in enumerate(neighbours):
        for j, p in enumerate(sorted(s)):
            nbr[k, j] = p
            slot[k, p] = j
    entry = np.arange(rows.size)
    r_blk, c_blk = block_of[rows], block_of[cols]
    in_ll = (r_blk >= 0) & (c_blk >= 0)
    if np.any(r_blk[in_ll] != c_blk[in_ll]):
        raise ValueError("local unknowns of different blocks are coupled")
    in_ln = (r_blk >= 0) & is_iface[cols]
    in_nl = is_iface[rows] & (c_blk >= 0)
    in_nn = is_iface[rows] & is_iface[cols]
    return _Layout(
        n=n,
        iface=iface,
        local=local,
        nbr=nbr,
        ll=(entry[in_ll], r_blk[in_ll], index_in[rows[in_ll]], index_in[cols[in_ll]]),
        ln=(
            entry[in_ln],
            r_blk[in_ln],
            index_in[rows[in_ln]],
            np.array([slot[k, p] for k, p in zip(r_blk[in_ln], pos[cols[in_ln]], strict=True)]),
        ),
        nl=(
            entry[in_nl],
            c_blk[in_nl],
            np.array([slot[k, p] for k, p in zip(c_blk[in_nl], pos[rows[in_nl]], strict=True)]),
            index_in[cols[in_nl]],
        ),
        nn=(entry[in_nn], pos[rows[in_nn]], pos[cols[in_nn]]),
    )


class _BlockSchur:
    """Factorize and solve one square pattern's matrices (entries in pattern order)."""

    def __init__(self, layout: _Layout) -> None:
        self.lay = layout
        k, b = layout.local.shape
        c = layout.nbr.shape[1]
        self.shape = (k, b, c, layout.m)
        self.pad = jnp.asarray(layout.local == layout.n)  # padded local slots: identity rows

    def factor(self, vals):
        """Factorizations of the matrix with entries ``vals`` (nnz,), traceable."""
        lay, (k, b, c, m) = self.lay, self.shape
        dt = vals.dtype
        e, blk, i, j = lay.ll
        a_ll = jnp.zeros((k, b, b), dt).at[blk, i, j].set(vals[e])
        a_ll = a_ll + jnp.where(self.pad[:, :, None], jnp.eye(b, dtype=dt)[None], 0)
        e, blk, i, s = lay.ln
        a_ln = jnp.zeros((k, b, c), dt).at[blk, i, s].set(vals[e])
        e, blk, s, j = lay.nl
        a_nl = jnp.zeros((k, c, b), dt).at[blk, s, j].set(vals[e])
        e, p, q = lay.nn
        a_nn = jnp.zeros((m, m), dt).at[p, q].set(vals[e])
        lu_ll = jax.vmap(lu_factor)(a_ll)
        x_ln = jax.vmap(lambda lu, piv, r: lu_solve((lu, piv), r))(*lu_ll, a_ln)
        contrib = a_nl @ x_ln  # (K, c, c)
        nbr = jnp.asarray(lay.nbr)
        s_mat = a_nn.at[nbr[:, :, None], nbr[:, None, :]].add(-contrib, mode="drop")
        return lu_ll, x_ln, a_nl, lu_factor(s_mat)

    def solve(self, factors, rhs):
        """rhs (n, k) -> (n, k)."""
        lay = self.lay
        lu_ll, x_ln, a_nl, lu_s = factors
        local, nbr = jnp.asarray(lay.local), jnp.asarray(lay.nbr)
        r_l = rhs.at[local].get(mode="fill", fill_value=0)  # (K, b, k)
        r_n = rhs[jnp.asarray(lay.iface)]  # (m, k)
        y_l = jax.vmap(lambda lu, piv, r: lu_solve((lu, piv), r))(*lu_ll, r_l)
        r_n = r_n.at[nbr].add(-(a_nl @ y_l), mode="drop")
        x_n = lu_solve(lu_s, r_n)
        x_l = y_l - x_ln @ x_n.at[nbr].get(mode="fill", fill_value=0)
        out = jnp.zeros_like(rhs).at[jnp.asarray(lay.iface)].set(x_n)
        return out.at[local].set(x_l, mode="drop")


class SchurLinalg:
    """The block-Schur backend (module doc): stateless, so members share it under ``vmap``."""

    backend: Backend = "dense"
    """Factorizations are values passed back in (``kept_factors``), as the dense backend's."""

    def __init__(self, structure: JacobianStructure, n_slots: int, max_block: int = MAX_BLOCK):
        self.pattern = pat = _Pattern(structure)
        self.lock = contextlib.nullcontext()
        iface = choose_interface(pat.rows, pat.cols, pat.n, max_block)
        self.full = _BlockSchur(_layout(pat.rows, pat.cols, pat.n, iface))
        gz_iface = iface[iface >= pat.n_x] - pat.n_x
        self.gz = _BlockSchur(_layout(pat.gz_rows, pat.gz_cols, pat.n_z, gz_iface))

    def describe(self) -> str:
        k, b, c, m = self.full.shape
        return f"interface {m} of {self.pattern.n} unknowns, {k} local blocks of <= {b}"

    def handles(self) -> dict:
        return {}

    def factor_shifted(self, vals, shifts, handles, which: str):
        return jax.vmap(self.full.factor)(self.pattern.shifted(vals, shifts))

    def solve_shifted(self, factors, rhs):
        """rhs (S, n, k) -> (S, n, k)."""
        return jax.vmap(self.full.solve)(factors, rhs)

    def factor_algebraic(self, vals, handles):
        return self.gz.factor(vals[self.pattern.gz_entries])

    def solve_algebraic(self, factors, rhs):
        """rhs (n_z, k) -> (n_z, k)."""
        return self.gz.solve(factors, rhs)

    def kept_factors(self, handles, kept):
        return kept
