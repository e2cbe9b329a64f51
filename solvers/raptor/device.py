"""RAPTOR runs of one network advanced together inside one compiled program (for accelerators).

``solvers.raptor.batch`` keeps each member's interval control on the host and batches only the
attempts: on a GPU every Jacobian evaluation and every round is then a device round trip
(docs/platform.md). Here the whole horizon of a group of members is one program: a
``lax.fori_loop`` over event segments, inside it a ``lax.while_loop`` over rounds, each round one
vmapped attempt for every member (``interval.make_attempt``, unchanged), with the Jacobian
evaluation (coloured JVPs, ``models.sparsity``) and the accept / reject / step-size control
(the host runner's rules, ``runner._segment``, ``control.PIController``, written again on
arrays) all inside; one dispatch advances every member to the end. The linear algebra is the
vmappable block-Schur backend (``schur.SchurLinalg``) or the dense one.

Same as a run alone (``runner``): the bank set and draws (a chord failure redraws, an accuracy
rejection only shortens), continuation, the stretch rule, Jacobian reuse while the chord
contracts fast, the H_KEEP hysteresis, the PI controller with its exponent learning and
chord-failure ceiling, the starting-interval heuristic and the acceptance test. Where it
deviates:

* factorizations are taken in every attempt (the runner keeps them while J, h and the bank
  stay): under ``vmap`` a per-member choice evaluates both branches, so keeping saves nothing;
  the factorization of the same matrix is the same, so results do not change;
* a member's Jacobian is evaluated in a round where any member needs one (kept where it needs
  none), for the same reason;
* consistent z (segment starts, the starting-interval probe) is Newton with a fresh Jacobian
  per iteration as alone, but without the host's MINPACK fallback: a member whose Newton fails
  is marked failed (``STATUS_ALGEBRAIC``), for the caller to solve alone;
* only one shape-parameter level (the default options): ``level_thresholds`` needs the spectral
  radius, which is a host power iteration; other options are refused;
* dense output is x alone at the evaluation grid (from the interval's own representation, as
  alone); z and the named outputs at the grid are not computed;
* the linear algebra differs from a run alone's KLU by round-off (block-Schur or dense LU).

Members run until the slowest of the group ends a segment; finished ones are masked. On XLA:CPU
(jaxlib 0.10.2) the ieee118 program with the block-Schur algebra compiles and then never returns
(every thread waiting, as ``batch.MAX_WIDTH`` describes); wscc9 runs, and so does ieee118 with
the dense algebra (docs/platform.md). Shapes
(members, segments, grid) are static, so one program serves every group of the same width.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem, Scenario
from models.sparsity import _values_fn, jacobian_structure
from solvers.raptor.control import (
    CEILING_EXPIRY,
    CEILING_RELAX,
    CEILING_SAFETY,
    EXPONENT_MAX,
    EXPONENT_RELAX,
    MIN_RATIO,
)
from solvers.raptor.interval import STATUS_CONVERGED, make_attempt
from solvers.raptor.options import RaptorOptions
from solvers.raptor.runner import H_KEEP, STRETCH, banks_for
from solvers.raptor.schur import SchurLinalg
from solvers.reduced import ALGEBRAIC_TOL
from solvers.shifted_lu import DenseLinalg
from solvers.stepping import initial_state
from solvers.trajectory import DIVERGENCE_LIMIT, segments

STATUS_RUNNING, STATUS_DONE = 0, 1
STATUS_MIN_INTERVAL, STATUS_NON_FINITE, STATUS_ALGEBRAIC, STATUS_ROUNDS = 2, 3, 4, 5
STATUS_NAMES = {
    STATUS_RUNNING: "running",
    STATUS_DONE: "succeeded",
    STATUS_MIN_INTERVAL: "interval below min_interval",
    STATUS_NON_FINITE: "state not finite or diverged",
    STATUS_ALGEBRAIC: "no consistent z (Newton)",
    STATUS_ROUNDS: "round cap of a segment reached",
}
MAX_ROUNDS = 1000
"""Rounds (attempts) per segment before the group gives up (a run alone takes 20-40 in all)."""
MAX_RECORDED = 256
"""Accepted interval ends recorded per member (for comparison with a run alone)."""
_OUTPUTS = ("x_eval", "x", "z", "status", "accepted", "rejected", "newton", "jac_evals", "t_acc")
NEWTON_MAX_ITER = 25
STEP_TOL = 1e-12
"""As ``solvers.dae_eval``'s consistent-z Newton."""


@dataclass
class DeviceBatch:
    """The members' results: states at the evaluation grid, final states, status and counters."""

    t_eval: np.ndarray
    x_eval: np.ndarray  # (B, n_eval, n_x)
    x_end: np.ndarray
    z_end: np.ndarray
    status: np.ndarray
    accepted: np.ndarray
    rejected: np.ndarray
    newton_iterations: np.ndarray
    jacobian_evaluations: np.ndarray
    t_accepted: np.ndarray  # (B, MAX_RECORDED), NaN after the last
    rounds: np.ndarray  # (groups, segments): rounds each group's while loop ran
    compile_seconds: float
    run_seconds: float

    @property
    def succeeded(self) -> np.ndarray:
        return self.status == STATUS_DONE


def _rms(v):
    return jnp.sqrt(jnp.mean(v**2))


class DeviceProgram:
    """The compiled program of one system, options, group width and segment count."""

    def __init__(
        self,
        system: DAESystem,
        options: RaptorOptions,
        width: int,
        n_segments: int,
        t_eval: np.ndarray,
        linalg: str = "schur",
    ) -> None:
        if options.level_thresholds:
            raise ValueError("the device loop supports one shape-parameter level only")
        self.system, self.opts, self.width, self.n_segments = system, options, width, n_segments
        self.t_eval = np.asarray(t_eval, dtype=float)
        structure, _, _ = jacobian_structure(system)
        self.structure = structure
        banks = banks_for(options)
        n_slots = banks.stacked["slot_owner"].shape[1]
        self.linalg = (SchurLinalg if linalg == "schur" else DenseLinalg)(structure, n_slots)
        self.banks = {k: jnp.asarray(v) for k, v in banks.stacked.items()}
        flat = [b for level in banks.banks for b in level]
        self.dense_a = jnp.asarray(np.stack([b.a for b in flat]))
        self.dense_c = jnp.asarray(np.stack([b.centres for b in flat]))
        self.dense_map = jnp.asarray(np.stack([b.d_pinv @ b.q_inv for b in flat]))
        self.n_draws = len(flat)
        self.jac = _values_fn(
            system, structure.rows, structure.cols, structure.colors, structure.n_colors
        )
        self.attempt = make_attempt(system, self.linalg, options.max_newton)
        lin = self.linalg
        slot_lam = banks.stacked["lam"][0][banks.stacked["slot_owner"][0]]

        def shapes():
            jv = jnp.zeros(structure.nnz)
            return (
                lin.factor_shifted(jv, 1e-3 * jnp.asarray(slot_lam), {}, "slots"),
                lin.factor_shifted(jv, jnp.ones(1), {}, "filter"),
                lin.factor_algebraic(jv, {}),
            )

        self.no_factors = jax.tree_util.tree_map(
            lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(shapes)
        )
        self._compiled = None
        self.compile_seconds = 0.0

    # --- per member pieces (vmapped by the group loop) ---------------------------------------

    def _consistent(self, x, z, p):
        """Newton on g with a fresh Jacobian per iteration (``DAEEvaluator.consistent_z``);
        returns (z, converged)."""
        sys_, lin = self.system, self.linalg

        def cond(c):
            return (c["it"] < NEWTON_MAX_ITER) & ~c["done"]

        def body(c):
            z = c["z"]
            g = sys_.g(x, z, p)
            small_g = jnp.max(jnp.abs(g)) <= 0.1 * ALGEBRAIC_TOL
            gz = lin.factor_algebraic(self.jac(x, z, p), {})
            dz = lin.solve_algebraic(gz, g[:, None])[:, 0]
            z_new = z - dz
            small = jnp.max(jnp.abs(dz)) <= STEP_TOL * jnp.maximum(1.0, jnp.max(jnp.abs(z_new)))
            ok_new = jnp.max(jnp.abs(sys_.g(x, z_new, p))) <= ALGEBRAIC_TOL
            return {
                "z": jnp.where(small_g, z, z_new),
                "it": c["it"] + 1,
                "done": small_g | (small & ok_new) | ~jnp.all(jnp.isfinite(z_new)),
            }

        out = jax.lax.while_loop(cond, body, {"z": z, "it": 0, "done": False})
        ok = jnp.max(jnp.abs(sys_.g(x, out["z"], p))) <= ALGEBRAIC_TOL
        return out["z"], ok

    def _segment_start(self, x, z, p):
        """Consistent z, f and the first interval (``control.starting_interval``)."""
        o, f = self.opts, self.system.f
        z, ok = self._consistent(x, z, p)
        f0 = f(x, z, p)
        if o.first_step is not None:
            return z, f0, jnp.asarray(o.first_step), ok
        scale = o.atol + o.rtol * jnp.abs(x)
        d0, d1 = _rms(x / scale), _rms(f0 / scale)
        h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
        x1 = x + h0 * f0
        z1, ok1 = self._consistent(x1, z, p)
        d2 = _rms((f(x1, z1, p) - f0) / scale) / h0
        big = jnp.maximum(d1, d2)
        h1 = jnp.where(
            big <= 1e-15,
            jnp.maximum(1e-6, h0 * 1e-3),
            (0.01 / jnp.maximum(big, 1e-300)) ** (1.0 / o.order_hint),
        )
        return z, f0, jnp.minimum(100.0 * h0, h1), ok & ok1

    def _accepted_h(self, c, h, err):
        """``PIController.accepted`` on arrays: (new controller fields, new h)."""
        o = self.opts
        k_nom = 1.0 / o.k_i
        err = jnp.maximum(err, 1e-10)
        prev = jnp.where(c["has_prev"], c["err_prev"], err)
        s = k_nom / c["k_eff"]
        fac = o.safety * err ** (-o.k_i * s) * prev ** (o.k_p * s)
        fac = jnp.clip(fac, o.fac_min, o.fac_max)
        fac = jnp.where(c["just_rejected"], jnp.minimum(fac, 1.0), fac)
        expire = h >= CEILING_EXPIRY * c["h_failed"]
        ceiling = jnp.where(expire, jnp.inf, c["h_ceiling"])
        failed = jnp.where(expire, jnp.inf, c["h_failed"])
        h_new = jnp.minimum(h * fac, jnp.maximum(h, CEILING_SAFETY * ceiling))
        new = {
            "err_prev": err,
            "has_prev": True,
            "just_rejected": False,
            "last_h": h,
            "last_err": err,
            "has_last": True,
            "k_eff": k_nom + EXPONENT_RELAX * (c["k_eff"] - k_nom),
            "h_ceiling": ceiling * CEILING_RELAX,
            "h_failed": failed,
        }
        return new, h_new

    def _rejected_h(self, c, h, err):
        """``PIController.rejected`` on arrays (err = inf: a chord failure)."""
        o = self.opts
        k_nom = 1.0 / o.k_i
        chord = ~jnp.isfinite(err)
        learn = (
            ~chord
            & c["has_last"]
            & (h >= MIN_RATIO * c["last_h"])
            & (err > 1.0)
            & (c["last_err"] > 1e-10)
        )
        k_obs = jnp.log(jnp.where(learn, err / c["last_err"], 2.0)) / jnp.log(
            jnp.where(learn, h / c["last_h"], 2.0)
        )
        k_eff = jnp.where(
            learn, jnp.minimum(EXPONENT_MAX, jnp.maximum(c["k_eff"], k_obs)), c["k_eff"]
        )
        fac = o.safety * jnp.where(chord, 1.0, err) ** (-o.k_i * (k_nom / k_eff))
        h_acc = h * jnp.minimum(1.0, jnp.maximum(o.fac_min, fac))
        new = dict(c)
        new.update(
            just_rejected=True,
            k_eff=k_eff,
            h_ceiling=jnp.where(chord, jnp.minimum(c["h_ceiling"], h), c["h_ceiling"]),
            h_failed=jnp.where(chord, h, c["h_failed"]),
        )
        return new, jnp.where(chord, 0.5 * h, h_acc)

    def _decide(self, s, out, idx, t_end, t_final):
        """One member's round after its attempt (``runner._segment``'s rules)."""
        o = self.opts
        h, t = s["h"], s["t"]
        ok = (out["status"] == STATUS_CONVERGED) & (out["g_end"] <= ALGEBRAIC_TOL)
        err = out["err"]
        refresh = ~ok & ~s["jac_fresh"]  # convergence slowed with an old J: new J, same h
        chord_fail = ~ok & s["jac_fresh"]
        inaccurate = ok & (err > 1.0)
        accept = ok & (err <= 1.0)
        ctrl = s["ctrl"]
        c_rej, h_rej = self._rejected_h(ctrl, h, jnp.where(chord_fail, jnp.inf, err))
        c_acc, h_acc = self._accepted_h(ctrl, h, err)
        t_new = jnp.where(t_end - (t + h) <= 1e-14 * jnp.maximum(1.0, jnp.abs(t_end)), t_end, t + h)
        fast = out["rate_max"] < o.jacobian_reuse_rate
        keep_h = fast & (h_acc / h >= 1.0) & (h_acc / h <= H_KEEP)
        h_next = jnp.where(accept, jnp.where(keep_h, h, h_acc), jnp.where(refresh, h, h_rej))
        pick = lambda a, r, k: jnp.where(accept, a, jnp.where(refresh, k, r))  # noqa: E731
        new_ctrl = jax.tree_util.tree_map(lambda a, r, k: pick(a, r, k), c_acc, c_rej, ctrl)
        # dense output of x at the grid points of [t, t + h) ([t, t + h] at the very end)
        grid = jnp.asarray(self.t_eval)
        last = (t_end >= t_final) & (t + h >= t_end)
        inside = (grid >= t) & jnp.where(last, grid <= t + h, grid < t + h)
        sg = jnp.clip((grid - t) / h, 0.0, 1.0)[:, None]
        psi = sg * jnp.exp(-self.dense_a[idx] * (sg - self.dense_c[idx]) ** 2)
        xs = s["x"] + (psi @ self.dense_map[idx]) @ out["y"]
        x_eval = jnp.where((accept & inside)[:, None], xs, s["x_eval"])
        x_new = jnp.where(accept, out["x_end"], s["x"])
        bad = accept & (
            ~jnp.all(jnp.isfinite(x_new)) | (jnp.max(jnp.abs(x_new)) > DIVERGENCE_LIMIT)
        )
        n_acc = s["accepted"] + accept
        return {
            **s,
            "t": jnp.where(accept, t_new, t),
            "h": h_next,
            "x": x_new,
            "z": jnp.where(accept, out["z_end"], s["z"]),
            "f": jnp.where(accept, out["f_end"], s["f"]),
            "need_jac": refresh | (accept & ~fast),
            "jac_fresh": jnp.where(accept & fast, False, s["jac_fresh"]),
            "draw": s["draw"] + chord_fail,
            "prev_idx": jnp.where(accept, idx, s["prev_idx"]),
            "w_prev": jnp.where(accept, out["w"], s["w_prev"]),
            "h_prev": jnp.where(accept, h, s["h_prev"]),
            "ctrl": new_ctrl,
            "accepted": n_acc,
            "rejected": s["rejected"] + (chord_fail | inaccurate),
            "newton": s["newton"] + out["newton_iterations"],
            "x_eval": x_eval,
            "t_acc": s["t_acc"]
            .at[s["accepted"]]
            .set(jnp.where(accept, t_new, s["t_acc"][s["accepted"]]), mode="drop"),
            "status": jnp.where(bad, STATUS_NON_FINITE, s["status"]),
        }

    # --- the group program -------------------------------------------------------------------

    def _fresh_ctrl(self, b: int) -> dict:
        k_nom = 1.0 / self.opts.k_i
        z, f = jnp.zeros(b), jnp.zeros(b, bool)
        return {
            "err_prev": z, "has_prev": f, "just_rejected": f, "last_h": z, "last_err": z,
            "has_last": f, "k_eff": z + k_nom, "h_ceiling": z + jnp.inf, "h_failed": z + jnp.inf,
        }  # fmt: skip

    def _group(self, x0, z0, params, bounds):
        """Every member from (x0, z0) through its segments (params: leaves (B, S, ...);
        bounds: (B, S, 2) segment start and end)."""
        o, b = self.opts, x0.shape[0]
        n_x = self.system.n_x
        t_final = jnp.max(bounds[:, :, 1], axis=1)
        attempt = jax.vmap(
            self.attempt,
            in_axes=(0, 0, 0, 0, 0, 0, None, None, 0, 0, 0, None, None, None, None, None, None),
        )
        jac = jax.vmap(self.jac)
        f64 = jnp.float64
        state = {
            "t": bounds[:, 0, 0],
            "h": jnp.ones(b),
            "x": x0,
            "z": z0,
            "f": jnp.zeros_like(x0),
            "jv": jnp.zeros((b, self.structure.nnz)),
            "need_jac": jnp.ones(b, bool),
            "jac_fresh": jnp.zeros(b, bool),
            "draw": jnp.zeros(b, jnp.int32),
            "prev_idx": jnp.full(b, -1, jnp.int32),
            "w_prev": jnp.zeros((b, o.n_rbf, n_x)),
            "h_prev": jnp.ones(b),
            "ctrl": self._fresh_ctrl(b),
            "accepted": jnp.zeros(b, jnp.int32),
            "rejected": jnp.zeros(b, jnp.int32),
            "newton": jnp.zeros(b, jnp.int32),
            "jac_evals": jnp.zeros(b, jnp.int32),
            "x_eval": jnp.full((b, self.t_eval.size, n_x), jnp.nan),
            "t_acc": jnp.full((b, MAX_RECORDED), jnp.nan),
            "status": jnp.zeros(b, jnp.int32),
        }

        def segment(k, carry):
            state, rounds = carry
            p = jax.tree_util.tree_map(lambda a: a[:, k], params)
            t_start, t_end = bounds[:, k, 0], bounds[:, k, 1]
            running = (state["status"] == STATUS_RUNNING) & (t_end > t_start)
            z, f, h, ok = jax.vmap(self._segment_start)(state["x"], state["z"], p)
            keep = lambda new, old: jnp.where(  # noqa: E731
                running.reshape((-1,) + (1,) * (jnp.ndim(old) - 1)), new, old
            )
            state = {
                **state,
                "t": keep(t_start, state["t"]),
                "z": keep(z, state["z"]),
                "f": keep(f, state["f"]),
                "h": keep(h, state["h"]),
                "need_jac": keep(True, state["need_jac"]),
                "jac_fresh": keep(False, state["jac_fresh"]),
                "draw": keep(0, state["draw"]),
                "prev_idx": keep(-1, state["prev_idx"]),
                "w_prev": keep(0.0, state["w_prev"]),
                "h_prev": keep(1.0, state["h_prev"]),
                "ctrl": jax.tree_util.tree_map(keep, self._fresh_ctrl(b), state["ctrl"]),
                "status": jnp.where(running & ~ok, STATUS_ALGEBRAIC, state["status"]),
            }
            h_cap = o.max_interval or jnp.inf

            def active(s):
                return (s["status"] == STATUS_RUNNING) & (s["t"] < t_end)

            def cond(c):
                return jnp.any(active(c[0])) & (c[1] < MAX_ROUNDS)

            def body(c):
                s, n = c
                live = active(s)
                h = jnp.minimum(s["h"], h_cap)
                h = jnp.where(t_end - s["t"] <= STRETCH * h, t_end - s["t"], h)
                tiny = live & (h < o.min_interval)
                need = live & s["need_jac"]
                jv = jax.lax.cond(
                    jnp.any(need),
                    lambda: jnp.where(need[:, None], jac(s["x"], s["z"], p), s["jv"]),
                    lambda: s["jv"],
                )
                s = {
                    **s,
                    "h": h,
                    "jv": jv,
                    "jac_fresh": s["jac_fresh"] | need,
                    "need_jac": s["need_jac"] & ~need,
                    "jac_evals": s["jac_evals"] + need,
                }
                idx = s["draw"] % self.n_draws
                mu = jnp.where(
                    (idx == s["prev_idx"]) & ~s["ctrl"]["just_rejected"], o.continuation, 0.0
                )
                out = attempt(
                    s["x"], s["z"], s["f"], h, p, jv, {}, self.banks, idx,
                    s["w_prev"] * (h / s["h_prev"])[:, None, None], mu,
                    f64(o.rtol), f64(o.atol), f64(o.chord_tol),
                    f64(o.predictor == "linearly_implicit"), self.no_factors, jnp.int32(1),
                )  # fmt: skip
                out.pop("factors")
                new = jax.vmap(self._decide, in_axes=(0, 0, 0, 0, 0))(s, out, idx, t_end, t_final)
                go = live & ~tiny
                merged = jax.tree_util.tree_map(
                    lambda a, old: jnp.where(go.reshape((-1,) + (1,) * (a.ndim - 1)), a, old),
                    new,
                    s,
                )
                merged["status"] = jnp.where(tiny, STATUS_MIN_INTERVAL, merged["status"])
                return merged, n + 1

            state, n = jax.lax.while_loop(cond, body, (state, jnp.int32(0)))
            state["status"] = jnp.where(
                active(state), STATUS_ROUNDS, state["status"]
            )  # the cap hit
            return state, rounds.at[k].set(n)

        state, rounds = jax.lax.fori_loop(
            0, self.n_segments, segment, (state, jnp.zeros(self.n_segments, jnp.int32))
        )
        state["status"] = jnp.where(state["status"] == STATUS_RUNNING, STATUS_DONE, state["status"])
        return {k: state[k] for k in _OUTPUTS}, rounds

    def compile(self, example: tuple) -> None:
        """Compile for the group's shapes (``example``: the arguments of one group)."""
        start = time.perf_counter()
        self._compiled = jax.jit(self._group).lower(*example).compile()
        self.compile_seconds = time.perf_counter() - start

    def __call__(self, *args):
        if self._compiled is None:
            self.compile(args)
        return self._compiled(*args)


def member_inputs(system: DAESystem, scenarios: list[Scenario], n_segments: int | None = None):
    """(x0, z0, params (leaves (B, S, ...)), bounds (B, S, 2)) of the members: each scenario's
    event segments, padded to ``n_segments`` with empty segments at its end."""
    per = [list(segments(system, sc)) for sc in scenarios]
    n_seg = n_segments or max(len(s) for s in per)
    if max(len(s) for s in per) > n_seg:
        raise ValueError(f"a scenario has more than {n_seg} segments")
    names = list(system.params)
    params = {k: [] for k in names}
    bounds = np.zeros((len(scenarios), n_seg, 2))
    for i, segs in enumerate(per):
        segs = segs + [segs[-1]] * (n_seg - len(segs))
        end = scenarios[i].t_end
        for j, seg in enumerate(segs):
            bounds[i, j] = (seg.t_start, seg.t_end) if j < len(per[i]) else (end, end)
        for k in names:
            params[k].append(np.stack([np.asarray(s.params[k], dtype=float) for s in segs]))
    x0 = np.stack([initial_state(system, sc)[0] for sc in scenarios])
    z0 = np.stack([initial_state(system, sc)[1] for sc in scenarios])
    stacked = {k: np.stack(v) for k, v in params.items()}
    return x0, z0, stacked, bounds


def _padded(a: np.ndarray, sl: slice, width: int) -> np.ndarray:
    """Rows ``sl`` of ``a``, padded to ``width`` rows with copies of the first."""
    part = a[sl]
    return np.concatenate([part, np.repeat(part[:1], width - len(part), 0)])


def solve_raptor_device(
    system: DAESystem,
    scenarios: list[Scenario],
    options: RaptorOptions | None = None,
    *,
    width: int | None = None,
    linalg: str = "schur",
    program: DeviceProgram | None = None,
) -> DeviceBatch:
    """Every scenario by the device loop, in groups of ``width`` (the last padded with copies of
    its first member); all scenarios must share one evaluation grid."""
    options = options or RaptorOptions()
    t_eval = scenarios[0].evaluation_grid()
    if any(not np.array_equal(sc.evaluation_grid(), t_eval) for sc in scenarios):
        raise ValueError("the device loop needs one evaluation grid for every member")
    x0, z0, params, bounds = member_inputs(
        system, scenarios, program.n_segments if program else None
    )
    width = width or (program.width if program else len(scenarios))
    program = program or DeviceProgram(system, options, width, bounds.shape[1], t_eval, linalg)
    outs, rounds = [], []
    run = 0.0
    for start in range(0, len(scenarios), width):
        sl = slice(start, min(start + width, len(scenarios)))
        n = sl.stop - sl.start
        args = (
            jnp.asarray(_padded(x0, sl, width)),
            jnp.asarray(_padded(z0, sl, width)),
            {k: jnp.asarray(_padded(v, sl, width)) for k, v in params.items()},
            jnp.asarray(_padded(bounds, sl, width)),
        )
        if program._compiled is None:
            program.compile(args)
        t0 = time.perf_counter()
        out, r = jax.device_get(program(*args))
        run += time.perf_counter() - t0
        outs.append(jax.tree_util.tree_map(lambda a, n=n: a[:n], out))
        rounds.append(r)
    cat = {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}
    return DeviceBatch(
        t_eval=t_eval,
        x_eval=cat["x_eval"],
        x_end=cat["x"],
        z_end=cat["z"],
        status=cat["status"],
        accepted=cat["accepted"],
        rejected=cat["rejected"],
        newton_iterations=cat["newton"],
        jacobian_evaluations=cat["jac_evals"],
        t_accepted=cat["t_acc"],
        rounds=np.stack(rounds),
        compile_seconds=program.compile_seconds,
        run_seconds=run,
    )
