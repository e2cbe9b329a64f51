"""Block-interconnected dq-frame networks (seed 001's design): components with their own
``f, g, h`` and named ports, wired by the exact linear interconnection

    x_i' = f_i(x_i, z_i, u_i),   0 = g_i(x_i, z_i, u_i),   y_i = h_i(x_i, z_i, u_i),
    u = F u_exo + G y,

and assembled into the platform's DAE contract (``models.dae.DAESystem``): ``x`` stacks every
block's states, the algebraic vector stacks every block's ``z_i`` and the *interconnection
unknowns* ``u_U``, and ``g`` stacks every ``g_i`` and the interconnection residual
``u_U - (F u_exo + G h)_U``. Every solver therefore solves all components' algebraic equations and
the interconnection together, with one global Newton on the analytic (autodiff) Jacobian, and
falls back to MINPACK ``hybr`` / ``lm`` when that fails (``solvers.reduced``), as seed 001 does.

Which port signals are unknowns (``ports``):

* ``"unknowns"``: every input slot, exactly seed 001's formulation (u is all Newton unknowns).
* ``"explicit"`` (default): a slot whose value does not depend on any input through a chain of
  feedthrough blocks (``Kind.feedthrough``: ``h`` depends on ``u``) is an exact function of
  ``(x, z)``; it is evaluated in topological order inside ``f`` and ``g`` instead of being
  iterated by Newton. Only slots on a feedthrough *cycle* (an algebraic loop) stay unknowns.
  Both give the same trajectories; the explicit form has far fewer algebraic unknowns (tests
  check the two agree).

Components of one kind are evaluated together (``jax.vmap`` over instances), so a 118-bus network
compiles as a few vectorized kernels, not hundreds of small ones. Complex quantities are stored
as (D, Q) pairs in the network's common frame, which rotates at ``omega_com * omega_b`` where
``omega_com`` is the reference block's speed (pu); every block reads it from its ``w`` port.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401

KindFunction = Callable[[Any, Any, Any, Mapping[str, Any]], Any]
"""(x, z, u, p) of one instance -> vector; p maps parameter names to scalars."""


@dataclass(frozen=True)
class Kind:
    """A component kind: its variables, ports and equations, shared by every instance.

    ``inputs`` are port names (wired to other blocks' outputs or to exogenous inputs);
    ``public`` maps an instance parameter to ``(element kind, global parameter)``: its values
    live in one array per network indexed like ``DAESystem.names[element kind]`` (so the
    platform's disturbances, e.g. ``load_step`` scaling ``load_g``, address them), the rest are
    stored per kind as ``"<kind>.<param>"``.
    """

    name: str
    states: tuple[str, ...]
    algebraics: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    params: tuple[str, ...]
    f: KindFunction
    g: KindFunction | None = None
    h: KindFunction | None = None
    feedthrough: bool = False
    public: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    controller_states: tuple[str, ...] = ()
    perturbation: Mapping[str, float] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        if self.algebraics and self.g is None:
            raise ValueError(f"kind {self.name!r}: algebraic variables need g")
        if self.outputs and self.h is None:
            raise ValueError(f"kind {self.name!r}: outputs need h")
        missing = [p for p in self.public if p not in self.params]
        if missing:
            raise ValueError(f"kind {self.name!r}: public parameters {missing} are not params")


@dataclass(frozen=True)
class Block:
    """One component instance: a kind, a unique name and its parameter values."""

    name: str
    kind: Kind
    params: Mapping[str, float]
    elements: Mapping[str, str] = field(default_factory=dict)
    """Element kind -> element name under which this block's public parameters are addressed
    (e.g. ``{"bus": "5"}`` for a node); default: the block's own name."""

    def __post_init__(self) -> None:
        missing = sorted(set(self.kind.params) - set(self.params))
        extra = sorted(set(self.params) - set(self.kind.params))
        if missing or extra:
            raise ValueError(
                f"block {self.name!r} ({self.kind.name}): missing parameters {missing}, "
                f"unknown parameters {extra}"
            )

    def element(self, element_kind: str) -> str:
        return self.elements.get(element_kind, self.name)


@dataclass
class Wiring:
    """The interconnection u = F u_exo + G y, built port by port.

    ``connect(sink, input, source, output, gain)`` adds ``gain * y[source.output]`` to the input
    slot (several sources on one slot sum: a node's current is the sum of its injections);
    ``exogenous(sink, input, name, value)`` feeds the slot from the named exogenous input
    ``name`` (a set-point that disturbances can step) with its initial value.
    """

    links: list[tuple[str, str, str, str, float]] = field(default_factory=list)
    exo: dict[tuple[str, str], str] = field(default_factory=dict)
    exo_values: dict[str, float] = field(default_factory=dict)

    def connect(self, sink: str, port: str, source: str, output: str, gain: float = 1.0) -> None:
        self.links.append((sink, port, source, output, float(gain)))

    def connect_pair(self, sink: str, port: str, source: str, output: str, gain=1.0) -> None:
        """Wire a complex (D, Q) port pair: ``port_D``/``port_Q`` from ``output_D``/``output_Q``."""
        for axis in ("D", "Q"):
            self.connect(sink, f"{port}_{axis}", source, f"{output}_{axis}", gain)

    def exogenous(self, sink: str, port: str, name: str, value: float) -> None:
        if name in self.exo_values and self.exo_values[name] != value:
            raise ValueError(f"exogenous input {name!r} given two initial values")
        self.exo[(sink, port)] = name
        self.exo_values[name] = float(value)


@dataclass(frozen=True)
class Group:
    """The instances of one kind, with index arrays into the stacked vectors."""

    kind: Kind
    blocks: tuple[Block, ...]
    x_index: np.ndarray  # (n, n_states)
    z_index: np.ndarray  # (n, n_alg)
    u_index: np.ndarray  # (n, n_inputs): slot numbers
    y_index: np.ndarray  # (n, n_outputs): output numbers
    public_index: Mapping[str, np.ndarray]  # param -> element positions (n,)


@dataclass(frozen=True)
class Layout:
    """Where every block's variables, slots and outputs sit; the interconnection in COO form."""

    groups: tuple[Group, ...]
    n_x: int
    n_zc: int  # component algebraics
    n_slots: int
    n_y: int
    state_names: tuple[str, ...]
    comp_alg_names: tuple[str, ...]
    slot_names: tuple[str, ...]
    output_names: tuple[str, ...]
    g_rows: np.ndarray
    g_cols: np.ndarray
    g_vals: np.ndarray
    slot_exo: np.ndarray  # exogenous index per slot, -1 where none
    exo_names: tuple[str, ...]
    exo_values: np.ndarray
    unknown_slots: np.ndarray  # slots solved by Newton (sorted)
    passes: int  # evaluation passes for the explicit slots
    element_names: Mapping[str, tuple[str, ...]]
    ports: str


def _group_blocks(blocks: Sequence[Block]) -> dict[str, list[Block]]:
    groups: dict[str, list[Block]] = {}
    kinds: dict[str, Kind] = {}
    for block in blocks:
        if block.kind.name in kinds and kinds[block.kind.name] is not block.kind:
            raise ValueError(f"two different kinds are named {block.kind.name!r}")
        kinds[block.kind.name] = block.kind
        groups.setdefault(block.kind.name, []).append(block)
    return groups


def build_layout(blocks: Sequence[Block], wiring: Wiring, ports: str = "explicit") -> Layout:
    """Index every variable and port, check the wiring, and find the interconnection unknowns."""
    if ports not in ("explicit", "unknowns"):
        raise ValueError(f"ports must be 'explicit' or 'unknowns', got {ports!r}")
    names = [b.name for b in blocks]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"block names must be unique; repeated: {dup}")
    by_name = {b.name: b for b in blocks}

    # element lists for public parameters, in block order
    element_names: dict[str, list[str]] = {}
    for block in blocks:
        for element_kind in {ek for ek, _ in block.kind.public.values()}:
            element_names.setdefault(element_kind, []).append(block.element(element_kind))
    for element_kind, values in element_names.items():
        if len(set(values)) != len(values):
            raise ValueError(f"{element_kind} names must be unique: {values}")

    n_x = n_zc = n_slots = n_y = 0
    state_names: list[str] = []
    alg_names: list[str] = []
    slot_names: list[str] = []
    output_names: list[str] = []
    slot_of: dict[tuple[str, str], int] = {}
    output_of: dict[tuple[str, str], int] = {}
    slot_block: list[str] = []
    output_block: list[str] = []
    groups = []
    for members in _group_blocks(blocks).values():
        kind = members[0].kind
        n = len(members)
        ns, na, ni, no = (
            len(kind.states),
            len(kind.algebraics),
            len(kind.inputs),
            len(kind.outputs),
        )
        x_index = n_x + np.arange(n * ns).reshape(n, ns)
        z_index = n_zc + np.arange(n * na).reshape(n, na)
        u_index = n_slots + np.arange(n * ni).reshape(n, ni)
        y_index = n_y + np.arange(n * no).reshape(n, no)
        n_x, n_zc, n_slots, n_y = n_x + n * ns, n_zc + n * na, n_slots + n * ni, n_y + n * no
        for b in members:
            state_names += [f"{b.name}.{s}" for s in kind.states]
            alg_names += [f"{b.name}.{s}" for s in kind.algebraics]
            for port in kind.inputs:
                slot_of[(b.name, port)] = len(slot_names)
                slot_names.append(f"{b.name}.{port}")
                slot_block.append(b.name)
            for out in kind.outputs:
                output_of[(b.name, out)] = len(output_names)
                output_names.append(f"{b.name}.{out}")
                output_block.append(b.name)
        public_index = {
            param: np.array([element_names[ek].index(b.element(ek)) for b in members])
            for param, (ek, _) in kind.public.items()
        }
        groups.append(Group(kind, tuple(members), x_index, z_index, u_index, y_index, public_index))

    rows, cols, vals = [], [], []
    for sink, port, source, output, gain in wiring.links:
        for blk in (sink, source):
            if blk not in by_name:
                raise ValueError(f"wiring names an unknown block {blk!r}")
        if (sink, port) not in slot_of:
            raise ValueError(
                f"block {sink!r} ({by_name[sink].kind.name}) has no input {port!r}; inputs: "
                f"{list(by_name[sink].kind.inputs)}"
            )
        if (source, output) not in output_of:
            raise ValueError(
                f"block {source!r} ({by_name[source].kind.name}) has no output {output!r}; "
                f"outputs: {list(by_name[source].kind.outputs)}"
            )
        rows.append(slot_of[(sink, port)])
        cols.append(output_of[(source, output)])
        vals.append(gain)
    exo_names = tuple(sorted(set(wiring.exo.values())))
    slot_exo = np.full(n_slots, -1, dtype=np.int64)
    for (sink, port), name in wiring.exo.items():
        if (sink, port) not in slot_of:
            raise ValueError(f"exogenous input {name!r}: block {sink!r} has no input {port!r}")
        slot_exo[slot_of[(sink, port)]] = exo_names.index(name)
    wired = set(rows) | set(np.flatnonzero(slot_exo >= 0).tolist())
    unwired = [slot_names[s] for s in range(n_slots) if s not in wired]
    if unwired:
        raise ValueError(
            f"unwired input ports: {unwired[:10]}{' ...' if len(unwired) > 10 else ''}"
        )

    g_rows, g_cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if ports == "unknowns":
        unknown, passes = np.arange(n_slots), 0
    else:
        unknown, passes = _loop_slots(
            n_slots, g_rows, g_cols, slot_block, output_block, by_name, slot_of
        )
        if unknown.size == 0 and n_zc == 0:
            # the DAE contract needs one algebraic variable: keep the first slot a Newton unknown
            unknown = np.array([0], dtype=np.int64)
    return Layout(
        groups=tuple(groups),
        n_x=n_x,
        n_zc=n_zc,
        n_slots=n_slots,
        n_y=n_y,
        state_names=tuple(state_names),
        comp_alg_names=tuple(alg_names),
        slot_names=tuple(slot_names),
        output_names=tuple(output_names),
        g_rows=g_rows,
        g_cols=g_cols,
        g_vals=np.asarray(vals, dtype=np.float64),
        slot_exo=slot_exo,
        exo_names=exo_names,
        exo_values=np.array([wiring.exo_values[n] for n in exo_names], dtype=np.float64),
        unknown_slots=unknown,
        passes=passes,
        element_names={k: tuple(v) for k, v in element_names.items()},
        ports=ports,
    )


def _loop_slots(n_slots, rows, cols, slot_block, output_block, by_name, slot_of):
    """Slots on algebraic loops (unknowns) and the evaluation passes the others need.

    level(slot) = 0 when every source block is free of feedthrough; else 1 + the largest level
    of the feedthrough source's own input slots. A slot met again while its level is being
    computed closes a loop: it becomes an unknown (its value comes from z, level 0)."""
    sources: dict[int, list[str]] = {s: [] for s in range(n_slots)}
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        sources[r].append(output_block[c])
    inputs_of: dict[str, list[int]] = {}
    for s, blk in enumerate(slot_block):
        inputs_of.setdefault(blk, []).append(s)
    level: dict[int, int] = {}
    unknown: set[int] = set()
    visiting: set[int] = set()

    def visit(slot: int) -> int:
        if slot in unknown:
            return 0
        if slot in level:
            return level[slot]
        if slot in visiting:
            unknown.add(slot)
            return 0
        visiting.add(slot)
        depth = 0
        for blk in set(sources[slot]):
            if by_name[blk].kind.feedthrough:
                depth = max(depth, 1 + max((visit(s) for s in inputs_of.get(blk, [])), default=0))
        visiting.discard(slot)
        if slot in unknown:  # closed a loop through itself
            return 0
        level[slot] = depth
        return depth

    for s in range(n_slots):
        visit(s)
    # a slot marked unknown after others used its provisional level keeps them valid: its value
    # comes from z, available in every pass
    del slot_of
    passes = 1 + max((level[s] for s in level if s not in unknown), default=0)
    return np.array(sorted(unknown), dtype=np.int64), passes


class Assembled:
    """The assembled network's f, g, outputs and port evaluation (pure JAX functions)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.n_unknown = int(layout.unknown_slots.size)
        self.n_z = layout.n_zc + self.n_unknown
        self._is_unknown = np.zeros(layout.n_slots, dtype=bool)
        self._is_unknown[layout.unknown_slots] = True

    # -- parameters -------------------------------------------------------------------------
    def group_params(self, group: Group, p: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for name in group.kind.params:
            if name in group.kind.public:
                out[name] = jnp.asarray(p[group.kind.public[name][1]])[group.public_index[name]]
            else:
                out[name] = jnp.asarray(p[f"{group.kind.name}.{name}"])
        return out

    # -- ports ------------------------------------------------------------------------------
    def _group_outputs(self, group: Group, x, zc, u, p):
        xs, zs, us = x[group.x_index], zc[group.z_index], u[group.u_index]
        assert group.kind.h is not None, f"{group.kind.name} has no outputs"
        return jax.vmap(group.kind.h)(xs, zs, us, self.group_params(group, p)).reshape(-1)

    def _outputs_all(self, x, zc, u, p, fixed=None):
        """Every output; ``fixed`` holds the outputs of the groups without feedthrough, which
        do not depend on ``u`` (computed once per evaluation, not once per pass)."""
        parts = []
        for k, group in enumerate(self.layout.groups):
            if not group.kind.outputs:
                continue
            if fixed is not None and k in fixed:
                parts.append(fixed[k])
            else:
                parts.append(self._group_outputs(group, x, zc, u, p))
        return jnp.concatenate(parts) if parts else jnp.zeros(0)

    def _wired(self, y, p):
        lay = self.layout
        ug = jnp.zeros(lay.n_slots).at[lay.g_rows].add(lay.g_vals * y[lay.g_cols])
        exo = jnp.asarray(p["u_exo"])
        fu = jnp.where(lay.slot_exo >= 0, exo[jnp.maximum(lay.slot_exo, 0)], 0.0)
        return ug + fu

    def ports(self, x, z, p):
        """(u, residual of the unknown slots): every input slot's value at (x, z)."""
        lay = self.layout
        zc, zu = z[: lay.n_zc], z[lay.n_zc :]
        base = jnp.zeros(lay.n_slots).at[lay.unknown_slots].set(zu)
        fixed = {
            k: self._group_outputs(group, x, zc, base, p)
            for k, group in enumerate(lay.groups)
            if group.kind.outputs and not group.kind.feedthrough
        }
        u = base
        for _ in range(lay.passes):
            y = self._outputs_all(x, zc, u, p, fixed)
            u = jnp.where(self._is_unknown, base, self._wired(y, p))
        wired = self._wired(self._outputs_all(x, zc, u, p, fixed), p)
        return u, zu - wired[lay.unknown_slots]

    # -- the DAE ----------------------------------------------------------------------------
    def f(self, x, z, p):
        u, _ = self.ports(x, z, p)
        zc = z[: self.layout.n_zc]
        parts = []
        for group in self.layout.groups:
            if group.kind.states:
                xs, zs, us = x[group.x_index], zc[group.z_index], u[group.u_index]
                fx = jax.vmap(group.kind.f)(xs, zs, us, self.group_params(group, p))
                parts.append(fx.reshape(-1))
        return jnp.concatenate(parts)

    def g(self, x, z, p):
        u, interconnection = self.ports(x, z, p)
        zc = z[: self.layout.n_zc]
        parts = []
        for group in self.layout.groups:
            if group.kind.algebraics:
                xs, zs, us = x[group.x_index], zc[group.z_index], u[group.u_index]
                gx = jax.vmap(group.kind.g)(xs, zs, us, self.group_params(group, p))
                parts.append(gx.reshape(-1))
        parts.append(interconnection)
        return jnp.concatenate(parts)

    def block_outputs(self, x, z, p):
        """Every block output y (ordered like ``layout.output_names``)."""
        u, _ = self.ports(x, z, p)
        return self._outputs_all(x, z[: self.layout.n_zc], u, p)

    def params(self) -> dict[str, np.ndarray]:
        """The parameter pytree: per-kind arrays, public arrays and ``u_exo``."""
        lay = self.layout
        out: dict[str, np.ndarray] = {"u_exo": lay.exo_values.copy()}
        public: dict[str, np.ndarray] = {}
        for group in lay.groups:
            kind = group.kind
            for name in kind.params:
                values = np.array([float(b.params[name]) for b in group.blocks])
                if name in kind.public:
                    ek, global_name = kind.public[name]
                    arr = public.setdefault(global_name, np.zeros(len(lay.element_names[ek])))
                    arr[group.public_index[name]] = values
                else:
                    out[f"{kind.name}.{name}"] = values
        out.update(public)
        return out
