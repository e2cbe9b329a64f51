"""Gaussian RBF bases of one interval, drawn once per solver configuration ("banks").

On normalised time s in [0, 1] each differential state is x_w(s) = x_k + s sum_j w_j phi_j(s),
phi_j(s) = exp(-a_j (s - c_j)^2), centres c_j uniform on [0, 1], so x_w(0) = x_k for any w.
With psi_j(s) = s phi_j(s) and collocation points s_1..s_M, the derivative samples are
Dv = D W^T (D_ij = psi_j'(s_i)); the minimum-norm coefficients for given samples are
W^T = D^+ Dv (rank-aware: truncated SVD), so the stage increments Y = X - 1 x_k^T are
Y = Q Dv with the M x M "stage matrix" Q = Psi D^+. The collocation equations
Dv = h F(x_k + Y) become Y = h Q F(x_k + Y): an implicit Runge-Kutta-like system whose chord
Jacobian I (x) I - h Q (x) A_0 decouples through the eigen-decomposition Q = T diag(lam) T^-1
into M systems (I - h lam_j A_0) of size n_x, as Radau5 does with its stage matrix. Q is real,
so its complex eigenvalues come in conjugate pairs and (I - h conj(lam) A_0)^-1 r =
conj((I - h lam A_0)^-1 conj(r)): only one matrix per pair (and per real eigenvalue) is
factorized ("slots"), which halves the factorizations for the usual all-complex spectra.

Shape parameters are sampled a_j ~ U[0, a_max] from a seeded generator, for a few a_max levels
(the physics-informed range, chosen per interval from h and the fastest local time scale) and a
few draws per level (redrawn after a rejection, as the RPNN code does). Everything here is
independent of h, so it is computed once, outside JIT. A draw is kept only when its stage matrix
is usable: full row rank of D, eigenvalues of Q in the right half-plane, a well-conditioned
eigenvector matrix, and a stability function |R(z)| <= 1 + STABILITY_SLACK on sampled points of
the closed left half-plane (R(inf) = 0 because s = 1 is a collocation point: stiffly accurate).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

RANK_RTOL = 1e-13
"""Relative singular-value threshold of the rank-aware pseudo-inverse of D."""
MAX_EIGVEC_COND = 1e5
"""Largest accepted condition number of Q's eigenvector matrix T (decoupling accuracy)."""
STABILITY_SLACK = 1e-2
"""Accepted excess of |R(z)| over 1 on the sampled left half-plane."""
PAIR_TOL = 1e-9
"""Relative distance within which two eigenvalues of Q count as a conjugate pair."""
MAX_DRAWS = 400
"""Draws tried per level before giving up (construction error, never a silent fallback)."""
CANDIDATES_PER_DRAW = 6
"""Usable draws examined per kept draw: the kept ones are those that reproduce low-degree
polynomial trajectories best (``consistency_error``), which sets the attainable accuracy."""
CONSISTENCY_DEGREE = 3
"""Highest polynomial degree of the trajectory checked by ``consistency_error``."""


def collocation_points(m: int) -> np.ndarray:
    """Radau-type Chebyshev points s_i = (1 - cos(pi i / M)) / 2, i = 1..M: s = 1 included."""
    i = np.arange(1, m + 1)
    return 0.5 * (1.0 - np.cos(np.pi * i / m))


def checkpoints(s_colloc: np.ndarray) -> np.ndarray:
    """Off-grid points where the residual is checked: midpoints between consecutive collocation
    points (and between 0 and s_1), so narrow features cannot hide between collocation points."""
    edges = np.concatenate([[0.0], s_colloc])
    return 0.5 * (edges[:-1] + edges[1:])


def gaussian_basis(s: np.ndarray, a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """psi_j(s) = s phi_j(s) and its s-derivative phi_j(s) (1 - 2 a_j s (s - c_j)); (len(s), N)."""
    d = s[:, None] - c[None, :]
    phi = np.exp(-a[None, :] * d**2)
    return s[:, None] * phi, phi * (1.0 - 2.0 * a[None, :] * s[:, None] * d)


@dataclass(frozen=True)
class Bank:
    """One basis draw and everything derived from it (all h-independent)."""

    a: np.ndarray  # (N,) shape parameters on normalised time
    centres: np.ndarray  # (N,)
    d_pinv: np.ndarray  # (N, M) rank-aware pseudo-inverse of D
    q: np.ndarray  # (M, M) stage matrix Psi D^+
    q_inv: np.ndarray  # (M, M)
    lam: np.ndarray  # (M,) complex eigenvalues of Q
    t: np.ndarray  # (M, M) complex eigenvectors
    t_inv: np.ndarray  # (M, M) complex
    check_values: np.ndarray  # (M, M): x(s_chk) - x_k = check_values @ Y
    check_slopes: np.ndarray  # (M, M): h x'(s_chk) = check_slopes @ Y
    end_slope: np.ndarray  # (M,): h x'(1) = end_slope @ Y
    init_map: np.ndarray  # (M, 2): Y_init = init_map @ [h f(0); x(1) - x_k] (min-norm match)
    init_reg: np.ndarray  # (N, N): (E^T E + mu I)^-1 for the continuation-biased guess
    init_e: np.ndarray  # (2, N): E = [psi'(0); psi(1)]
    psi_colloc: np.ndarray  # (M, N)
    slot_owner: np.ndarray  # (S,) eigenvalue index factorized in each slot
    slot_partner: np.ndarray  # (S,) index of its conjugate partner (= owner if real)
    slot_of: np.ndarray  # (M,) slot whose factorization solves eigenvalue j
    is_partner: np.ndarray  # (M,) 1 when eigenvalue j is solved by conjugating its slot's LU

    def consistency_error(self) -> float:
        """max over degrees k = 1..CONSISTENCY_DEGREE of |Q (k s^(k-1)) - s^k| at the collocation
        points: how far the interval map is from integrating a polynomial trajectory exactly."""
        s = collocation_points(self.q.shape[0])
        return max(
            float(np.max(np.abs(self.q @ (k * s ** (k - 1)) - s**k)))
            for k in range(1, CONSISTENCY_DEGREE + 1)
        )

    def value_rows(self, s: np.ndarray) -> np.ndarray:
        """Rows L(s) with x(s) - x_k = L(s) @ Y (dense output)."""
        psi, _ = gaussian_basis(np.asarray(s, dtype=float), self.a, self.centres)
        return psi @ self.d_pinv @ self.q_inv


def conjugate_slots(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(owner, partner, slot_of, is_partner) pairing each eigenvalue with Im < 0 to its
    conjugate; raises when the spectrum of the real matrix Q is not closed under conjugation."""
    scale = max(float(np.max(np.abs(lam))), 1e-300)
    owners = [j for j in range(len(lam)) if lam[j].imag >= -PAIR_TOL * scale]
    slot_of = np.zeros(len(lam), dtype=np.int32)
    is_partner = np.zeros(len(lam), dtype=np.int32)
    partner = list(owners)
    for k, j in enumerate(owners):
        slot_of[j] = k
    for j in range(len(lam)):
        if lam[j].imag >= -PAIR_TOL * scale:
            continue
        k = int(np.argmin([abs(lam[o] - np.conj(lam[j])) for o in owners]))
        if abs(lam[owners[k]] - np.conj(lam[j])) > PAIR_TOL * scale or partner[k] != owners[k]:
            raise ValueError("eigenvalues of the stage matrix are not in conjugate pairs")
        partner[k], slot_of[j], is_partner[j] = j, k, 1
    return np.array(owners, np.int32), np.array(partner, np.int32), slot_of, is_partner


def _stability_excess(q: np.ndarray, lam: np.ndarray, t: np.ndarray) -> float:
    """max |R(z)| - 1 over sampled z in the closed left half-plane, where
    R(z) = 1 + z b^T (I - z Q)^-1 1 with b^T the last row of Q (stiffly accurate), evaluated
    through the eigen-decomposition Q = T diag(lam) T^-1 for all z at once."""
    radii = np.logspace(-2, 6, 60)
    zs = np.concatenate([radii * np.exp(1j * ang) for ang in (np.pi / 2, 2.2, 2.7, np.pi)])
    zs = np.concatenate([zs, zs.conj()])
    left = q[-1] @ t  # b^T T
    right = np.linalg.solve(t, np.ones(q.shape[0]))  # T^-1 1
    r = 1.0 + zs * ((left * right)[None, :] / (1.0 - zs[:, None] * lam[None, :])).sum(axis=1)
    return float(np.max(np.abs(r)) - 1.0)


def draw_bank(
    rng: np.random.Generator, n_rbf: int, n_colloc: int, a_max: float, mu: float
) -> Bank | None:
    """One random draw; None when the draw fails a usability check (see module doc)."""
    s = collocation_points(n_colloc)
    centres = np.linspace(0.0, 1.0, n_rbf)
    a = rng.uniform(0.0, a_max, n_rbf)
    psi, d = gaussian_basis(s, a, centres)
    sv = np.linalg.svd(d, compute_uv=False)
    if np.sum(sv > RANK_RTOL * sv[0]) < n_colloc:
        return None
    d_pinv = np.linalg.pinv(d, rcond=RANK_RTOL)
    q = psi @ d_pinv
    lam, t = np.linalg.eig(q)
    if lam.real.min() <= 0 or np.linalg.cond(t) > MAX_EIGVEC_COND:
        return None
    if _stability_excess(q, lam, t) > STABILITY_SLACK:
        return None
    q_inv = np.linalg.inv(q)
    s_chk = checkpoints(s)
    psi_chk, dpsi_chk = gaussian_basis(s_chk, a, centres)
    _, dpsi_end = gaussian_basis(np.array([1.0]), a, centres)
    ends, end_slopes = gaussian_basis(np.array([0.0, 1.0]), a, centres)
    e = np.stack([end_slopes[0], ends[1]])  # slope at s = 0, value at s = 1
    e_pinv = np.linalg.pinv(e)
    owner, partner, slot_of, is_partner = conjugate_slots(lam)
    return Bank(
        a=a,
        centres=centres,
        d_pinv=d_pinv,
        q=q,
        q_inv=q_inv,
        lam=lam,
        t=t,
        t_inv=np.linalg.inv(t),
        check_values=psi_chk @ d_pinv @ q_inv,
        check_slopes=dpsi_chk @ d_pinv @ q_inv,
        end_slope=(dpsi_end @ d_pinv @ q_inv)[0],
        init_map=psi @ e_pinv,
        init_reg=np.linalg.inv(e.T @ e + mu * np.eye(n_rbf)),
        init_e=e,
        psi_colloc=psi,
        slot_owner=owner,
        slot_partner=partner,
        slot_of=slot_of,
        is_partner=is_partner,
    )


@dataclass(frozen=True)
class BankSet:
    """Banks for every a_max level: ``banks[level][k]``, plus the same data stacked as arrays
    of shape (levels * draws, ...) for the compiled interval solve."""

    a_max_levels: tuple[float, ...]
    banks: tuple[tuple[Bank, ...], ...]
    stacked: dict[str, np.ndarray]

    def bank(self, level: int, k: int) -> Bank:
        return self.banks[level][k % len(self.banks[level])]

    def flat_index(self, level: int, k: int) -> int:
        return level * len(self.banks[0]) + (k % len(self.banks[level]))


STACKED_FIELDS = (
    "q",
    "lam",
    "t",
    "t_inv",
    "check_values",
    "check_slopes",
    "end_slope",
    "init_map",
    "init_reg",
    "init_e",
    "psi_colloc",
    "d_pinv",
    "q_inv",
    "slot_of",
    "is_partner",
)
SLOT_FIELDS = ("slot_owner", "slot_partner")
"""Per-slot fields, padded to the largest slot count of the set (a padded slot repeats slot 0:
one wasted factorization, never a wrong one)."""


@functools.cache
def build_banks(
    n_rbf: int, n_colloc: int, seed: int, a_max_levels: tuple[float, ...], draws: int, mu: float
) -> BankSet:
    """Seeded, reproducible banks: per level, the ``draws`` most consistent of
    ``CANDIDATES_PER_DRAW * draws`` usable draws; raises when a level yields too few."""
    rng = np.random.default_rng(seed)
    levels = []
    for a_max in a_max_levels:
        usable: list[Bank] = []
        for _ in range(MAX_DRAWS):
            bank = draw_bank(rng, n_rbf, n_colloc, a_max, mu)
            if bank is not None:
                usable.append(bank)
                if len(usable) == CANDIDATES_PER_DRAW * draws:
                    break
        kept = sorted(usable, key=Bank.consistency_error)[:draws]
        if len(kept) < draws:
            raise ValueError(
                f"only {len(kept)} of {draws} usable RBF draws for N={n_rbf}, M={n_colloc}, "
                f"a_max={a_max:g} after {MAX_DRAWS} tries: lower a_max or change N/M"
            )
        levels.append(tuple(kept))
    flat = [b for level in levels for b in level]
    stacked = {name: np.stack([getattr(b, name) for b in flat]) for name in STACKED_FIELDS}
    n_slots = max(len(b.slot_owner) for b in flat)
    for name in SLOT_FIELDS:
        stacked[name] = np.stack(
            [np.pad(getattr(b, name), (0, n_slots - len(b.slot_owner)), mode="edge") for b in flat]
        )
    return BankSet(tuple(a_max_levels), tuple(levels), stacked)
