"""One RAPTOR interval attempt on the unreduced DAE (x and z together), sparse or dense.

Unknowns: the stage increments Y = X - 1 x_k^T of the differential states and the algebraic
values Z at the M collocation points (``basis``). The collocation equations

    Y - h Q F(x_k + Y, Z) = 0,       G(x_k + Y, Z) = 0        (M (n_x + n_z) equations)

are solved together by a chord (modified Newton) iteration with the Jacobian J = [[f_x, f_z],
[g_x, g_z]] frozen at the interval start. Multiplying the g-rows by -h Q, the chord matrix is
I (x) E - h Q (x) J with E = diag(1 on x, 0 on z), and the eigen-decomposition Q = T diag(lam)
T^-1 decouples it, as Radau5 does for DAEs with its stage matrix, into M systems

    (E - h lam_j J) u_j = (T^-1 [-R_Y ; h Q G])_j,          [dY ; dZ] = Re(T U)

each with J's own sparsity pattern (complex for conjugate pairs, one factorization per pair).
So no separate algebraic Newton runs at the collocation points, and nothing is ever reduced
(the reduced Jacobian f_x - f_z g_z^-1 g_x fills in: 15 % dense on IEEE 118 against J's 0.6 %).

An attempt

1. factorizes E - h lam_s J for every slot s and the real E - h J (predictor and filter);
2. initializes Y from the start and predicted end derivatives, x_hat = x_k + h (I - h A)^-1 f_k
   (linearly implicit Euler through E - h J: the reduced (I - h A)^-1 is its x-block), Z linear
   between z_k and the linearized z_hat, biased to the previous interval's coefficients;
3. iterates the chord update, each followed by one simplified-Newton pass on g at all points
   (``Z_PASSES``), with Hairer-Wanner control on the contraction rate theta of the
   scaled update of x (the tolerances are set in state units; z follows x, and its
   consistency is enforced where it is used: at the interval end and at the checkpoints);
4. makes the end consistent (simplified Newton on g with the frozen g_z) and evaluates the
   acceptance indicator: the DAE residual h x_w'(s) - h f(x_w(s), z(s)) at the off-grid
   checkpoints, z(s) consistent there, filtered by (I - h A)^-1 (the x-block of
   (E - h J)^-1) and normalised by atol + rtol |x|, RMS over points and states.

The linear algebra is ``solvers.shifted_lu``: dense LAPACK for small systems, KLU with one
symbolic analysis per structure for large ones: the same systems, so the two agree to round-off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.dae_eval import DAEEvaluator, JacobianAt
from solvers.raptor.basis import collocation_points
from solvers.shifted_lu import ShiftedFactors, ShiftedLU

Z_PASSES = 1
"""Simplified-Newton passes on g (frozen g_z, all points at once) after each chord update. The
chord matrix is linear in z, but g is not (machine angles rotate the network interface), and
moving Z back towards g = 0 keeps F on the constraint manifold: on wscc9 (bus-7 fault, rtol
1e-6) 0 passes took 33 accepted + 12 rejected intervals, 1 pass 26 + 8, 2-3 passes 26 + 8."""
NEGLIGIBLE_UPDATE = 1e-6
"""A chord update this small (in units of the tolerance) is converged whatever the rate: at an
equilibrium the updates are round-off, whose 'rate' is meaningless."""


@dataclass
class ChordFactors:
    """The factorizations of one (h, J) pair: every slot's E - h lam_s J (complex) and the real
    E - h J of the predictor and the filter."""

    h: float
    jac: JacobianAt
    slots: ShiftedFactors
    filter: ShiftedFactors

    def filter_solve(self, rhs: np.ndarray) -> np.ndarray:
        """(E - h J)^-1 rhs for rhs (n, k) real."""
        return self.filter.solve(rhs[None])[0]


@dataclass
class AttemptResult:
    converged: bool
    y: np.ndarray  # (M, n_x)
    zc: np.ndarray  # (M, n_z)
    x_end: np.ndarray
    z_end: np.ndarray
    f_end: np.ndarray
    w: np.ndarray  # (N, n_x) coefficients
    err: float
    iterations: int
    rate_max: float
    consistent: bool


class IntervalSolver:
    """Attempts of one RAPTOR configuration on one system (bank set, LU backend)."""

    def __init__(self, lu: ShiftedLU, n_colloc: int) -> None:
        self.lu = lu
        self.n_x, self.n_z = lu.structure.n_x, lu.structure.n_z
        self.s_colloc = collocation_points(n_colloc)

    def factorize(self, h: float, jac: JacobianAt, bank) -> ChordFactors:
        slots = self.lu.factor(jac.values, h * bank.lam[bank.slot_owner])
        return ChordFactors(h, jac, slots, self.lu.factor(jac.values, np.array([h])))

    def attempt(
        self,
        ev: DAEEvaluator,
        chord: ChordFactors,
        bank,
        x_k: np.ndarray,
        z_k: np.ndarray,
        f_k: np.ndarray,
        w_prev: np.ndarray,
        mu: float,
        *,
        rtol: float,
        atol: float,
        kappa: float,
        implicit: bool,
        max_newton: int,
    ) -> AttemptResult:
        n_x = self.n_x
        h = chord.h
        kern = ev.kernels
        m = len(self.s_colloc)
        # 2. initial guess
        if implicit:
            dw = chord.filter_solve(np.concatenate([h * f_k, np.zeros(self.n_z)])[:, None])[:, 0]
            dx, dz = dw[:n_x], dw[n_x:]
        else:
            dx = h * f_k
            dz = -chord.jac.algebraic.solve(chord.jac.algebraic.g_x @ dx)
        x_hat, z_hat = x_k + dx, z_k + dz
        f_hat = ev.f(x_hat, z_hat)
        b = h * np.stack([f_k, f_hat])
        if mu > 0:
            w_fit = bank.init_reg @ (bank.init_e.T @ b + mu * w_prev)
            y = bank.psi_colloc @ w_fit
        else:
            y = bank.init_map @ b
        zc = z_k + self.s_colloc[:, None] * (z_hat - z_k)[None, :]
        # 3. chord iteration
        dnorm_prev, rate_max, converged, it = np.inf, 0.0, False, 0
        for it in range(1, max_newton + 1):
            xc = x_k + y
            f, g = kern.fg(xc, zc, ev.p)
            ev.stats.rhs_evaluations += m
            rhs = np.concatenate([-(y - h * (bank.q @ f)), h * (bank.q @ g)], axis=1)
            du = self._decoupled_solve(chord, bank, bank.t_inv @ rhs)
            dy, dzc = du[:, :n_x], du[:, n_x:]
            scale = atol + rtol * np.maximum(np.abs(x_k), np.abs(xc))
            dnorm = np.sqrt(np.mean((dy / scale) ** 2))
            y, zc = y + dy, zc + dzc
            for _ in range(Z_PASSES):
                _, g_new = kern.fg(x_k + y, zc, ev.p)
                zc = zc - chord.jac.algebraic.solve(g_new.T).T
                ev.stats.algebraic_iterations += 1
            if not (np.isfinite(dnorm) and np.all(np.isfinite(y))):
                break
            rate = dnorm / dnorm_prev if it > 1 else 0.0
            rate_max = max(rate_max, rate)
            if dnorm <= NEGLIGIBLE_UPDATE or (
                it > 1 and rate < 1.0 and rate / (1.0 - rate) * dnorm < kappa
            ):
                converged = True
                break
            if it > 1 and (rate >= 1.0 or rate ** (max_newton - it) / (1.0 - rate) * dnorm > kappa):
                break
            dnorm_prev = dnorm
        ev.stats.newton_iterations += it
        if not converged:
            return AttemptResult(False, y, zc, x_k, z_k, f_k, w_prev, np.inf, it, rate_max, False)
        # 4. consistent end and the acceptance indicator
        x_end = x_k + y[-1]
        z_end, f_end, consistent = ev.simplified_newton(x_end[None], zc[-1:], chord.jac.algebraic)
        err = self._indicator(ev, chord, bank, x_k, z_k, y, zc, rtol, atol)
        return AttemptResult(
            True,
            y,
            zc,
            x_end,
            z_end[0],
            f_end[0],
            bank.d_pinv @ (bank.q_inv @ y),
            err,
            it,
            rate_max,
            consistent,
        )

    def _decoupled_solve(self, chord: ChordFactors, bank, rhs_hat: np.ndarray) -> np.ndarray:
        """Re(T U) with U_j = (E - h lam_j J)^-1 rhs_hat_j: each slot's factorization solves its
        owner's right-hand side and the conjugate of its partner's (conj(lam) gives conj(sol))."""
        both = np.stack(
            [rhs_hat[bank.slot_owner], np.conj(rhs_hat[bank.slot_partner])], axis=2
        )  # (S, n, 2)
        sol = chord.slots.solve(both)
        u = sol[bank.slot_of, :, bank.is_partner]  # (M, n)
        u = np.where(bank.is_partner[:, None] > 0, np.conj(u), u)
        return np.real(bank.t @ u)

    def _indicator(
        self, ev: DAEEvaluator, chord: ChordFactors, bank, x_k, z_k, y, zc, rtol, atol
    ) -> float:
        """Filtered DAE residual at the off-grid checkpoints, RMS in units of the tolerance."""
        x_chk = x_k + bank.check_values @ y
        z_guess = z_k + bank.check_values @ (zc - z_k)
        _, f_chk, _ = ev.simplified_newton(x_chk, z_guess, chord.jac.algebraic)
        defect = bank.check_slopes @ y - chord.h * f_chk  # (M, n_x)
        rhs = np.concatenate([defect, np.zeros((defect.shape[0], self.n_z))], axis=1)
        filtered = chord.filter_solve(rhs.T).T[:, : self.n_x]
        scale = atol + rtol * np.maximum(np.abs(x_k), np.abs(x_chk))
        err = float(np.sqrt(np.mean((filtered / scale) ** 2)))
        return err if np.isfinite(err) else np.inf
