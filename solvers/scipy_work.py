"""Exact per-step work of SciPy's ``OdeSolver`` classes, read from what each class exposes.

``OdeSolver.step()`` hides rejected attempts and Newton iterations; SciPy reports only ``nfev``,
``njev`` and ``nlu``. Each meter below wraps the right-hand side (recording the time of every call
made after the step's start ``t_old``) and reads the solver's own counters before and after
``step()``. How each counter follows from the class's source (scipy/integrate/_ivp/):

* ``radau`` (radau.py): every Newton iteration evaluates the three stages at t_old + c_i h
  (c_3 = 1), and an accepted step adds one call f(t_new, y_new). Attempted step sizes = distinct
  call times after t_old / 3; Newton iterations = (calls after t_old - 1) / 3. Error-estimate
  and Jacobian calls are made at t_old and are excluded by construction.
* ``bdf`` (bdf.py): every call through ``self.fun`` (the one that counts ``nfev``) comes from the
  Newton loop ``solve_bdf_system``, one per iteration, so Newton iterations = the step's nfev
  increase (finite-difference Jacobian columns go through ``fun_vectorized``, uncounted by nfev).
  Each attempt solves at its own t_new = t_old + h and a retry with a fresh Jacobian keeps h, so
  attempted step sizes = distinct call times after t_old.
* ``lsoda`` (lsoda.py, ODEPACK DSTODA): with itask 5 one ``step()`` is one internal step
  (NST, ``iwork[10]``, grows by one). Every corrector iteration calls f once at the attempt's
  time TN = t_old + h; a rejected attempt retries with a smaller h, a Jacobian refresh at the
  same h; the restart after repeated error-test failures evaluates f at t_old. So attempted step
  sizes = distinct call times after t_old, and corrector iterations (functional iteration in
  Adams mode, Newton in BDF mode) = calls after t_old, minus n calls per finite-difference
  Jacobian (DPRJA, MITER 2) when no Jacobian is given (NJE, ``iwork[12]``, counts those; ODEPACK
  factorizes once per Jacobian evaluation, so factorizations = NJE increase).
* ``rk45``/``dop853`` (rk.py): each attempt makes n_stages - 1 stage calls plus f(t_new), all
  counted by nfev (FSAL reuses the first stage), so attempts = nfev increase / n_stages, read
  before ``dense_output()`` (DOP853's interpolant adds 3 calls). No Newton iterations.

Accepted steps are ``step()`` calls (LSODA: the NST increase); rejected = attempts - accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK45, OdeSolver, Radau

from solvers.reduced import ReducedODE

RADAU_STAGES = 3
"""Stages of Radau IIA order 5: each Newton iteration evaluates all three."""
LSODA_NST = 10
"""Index in ODEPACK's iwork (0-based) of NST, the number of internal steps."""
LSODA_NJE = 12
"""Index in ODEPACK's iwork (0-based) of NJE, Jacobian evaluations (= LU factorizations)."""


@dataclass(frozen=True)
class StepWork:
    """The work of one accepted ``step()``."""

    accepted: int
    attempts: int
    newton_iterations: int
    lu_factorizations: int


class WorkMeter:
    """Wraps the reduced RHS and turns counter differences around ``step()`` into ``StepWork``."""

    def __init__(self, ode: ReducedODE, n_states: int, finite_difference_jacobian: bool) -> None:
        self.ode = ode
        self.n = n_states
        self.fd_jacobian = finite_difference_jacobian
        self.t_old = -np.inf
        self.times: set[float] = set()
        self.calls = 0
        self._nfev = self._nlu = self._nje = self._nst = 0

    def rhs(self, t: float, x: np.ndarray) -> np.ndarray:
        if t > self.t_old:
            self.times.add(float(t))
            self.calls += 1
        return self.ode.rhs(t, x)

    def begin(self, solver: OdeSolver) -> None:
        self.t_old, self.times, self.calls = solver.t, set(), 0
        self._nfev, self._nlu = solver.nfev, solver.nlu
        if isinstance(solver, LSODA):
            iwork = _lsoda_iwork(solver)
            self._nje, self._nst = int(iwork[LSODA_NJE]), int(iwork[LSODA_NST])

    def end(self, solver: OdeSolver) -> StepWork:
        """Work of the step just taken; call right after ``step()``, before ``dense_output()``."""
        nlu = solver.nlu - self._nlu
        if isinstance(solver, Radau):
            return StepWork(
                1,
                max(1, len(self.times) // RADAU_STAGES),
                max(0, self.calls - 1) // RADAU_STAGES,
                nlu,
            )
        if isinstance(solver, BDF):
            return StepWork(1, max(1, len(self.times)), solver.nfev - self._nfev, nlu)
        if isinstance(solver, LSODA):
            iwork = _lsoda_iwork(solver)
            nje, nst = int(iwork[LSODA_NJE]) - self._nje, int(iwork[LSODA_NST]) - self._nst
            newton = self.calls - (self.n * nje if self.fd_jacobian else 0)
            return StepWork(nst, max(nst, len(self.times)), max(0, newton), nje)
        if isinstance(solver, RK45 | DOP853):
            return StepWork(1, max(1, (solver.nfev - self._nfev) // solver.n_stages), 0, 0)
        raise TypeError(f"no work meter for {type(solver).__name__}")


def _lsoda_iwork(solver: LSODA) -> np.ndarray:
    return solver._lsoda_solver._integrator.iwork
