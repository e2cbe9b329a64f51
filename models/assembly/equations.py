"""The equations of an assembled network: f (device derivatives), g (KCL and the machines'
stator equations) and the outputs, each device model evaluated once per group.

Layout of z: bus voltages Vr, Vi (pu, system base), then machine currents Id, Iq (pu on MBASE);
g: real and imaginary KCL per bus (``models.network``), then the d and q stator residuals per
machine (a tripped machine, ``gen_status`` 0, has Id = Iq = 0 instead). Outputs: bus V and theta,
machine omega, delta and Pe, the bus devices' measures (per model in name order), ``omega_coi``,
``kcl_max``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from models.assembly.layout import DeviceGroup, Layout
from models.components.loads import zip_current
from models.devices.base import to_machine_frame, to_network_frame
from models.network import Topology, current_mismatch


@dataclass(frozen=True, eq=False)
class NetworkEquations:
    """f, g and outputs of ``layout``'s devices on a network of ``topo`` with static loads at
    ``load_buses``; ``omega_s`` the synchronous speed (rad/s). Hashed by identity, as the
    functions it hands out are."""

    layout: Layout
    topo: Topology
    load_buses: np.ndarray
    omega_s: float

    @property
    def _nb(self) -> int:
        return self.topo.n_bus

    def _split(self, z):
        nb, ng = self._nb, self.layout.n_gen
        return z[:nb], z[nb : 2 * nb], z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]

    def machine_signals(self, x):
        """Rotor angle and speed per generator slot (0 and 1 where a slot's model lacks them)."""
        ng = self.layout.n_gen
        omega, delta = jnp.ones(ng), jnp.zeros(ng)
        for grp in self.layout.groups["machine"]:
            xs = grp.states(x)
            delta = grp.put(delta, xs[grp.model.states.index("delta")])
            omega = grp.put(omega, xs[grp.model.states.index("omega")])
        return delta, omega

    def signals(self, x, z, p, omega, tm) -> dict:
        """The machine signals ``models.devices.base.SIGNALS`` (per slot, MBASE)."""
        vr, vi, id_, iq = self._split(z)
        gen_bus = self.layout.gen_bus
        delta, _ = self.machine_signals(x)
        vd, vq = to_machine_frame(vr[gen_bus], vi[gen_bus], delta)
        ifd = p["efd"]
        if any("ifd" in g.model.inputs for g in self.layout.groups["exciter"]):
            for grp in self.layout.groups["machine"]:
                if grp.model.field_current is not None:
                    i = grp.model.field_current(grp.states(x), grp.take(id_), grp.take(iq),
                                                grp.view(p))  # fmt: skip
                    ifd = grp.put(ifd, i)
        return {"omega": omega, "vt": jnp.sqrt(vd**2 + vq**2), "vd": vd, "vq": vq, "Id": id_,
                "Iq": iq, "ifd": ifd, "pe": vd * id_ + vq * iq, "tm": tm}  # fmt: skip

    def _bus_voltage(self, z, grp: DeviceGroup):
        b = self.layout.bus_of[grp.members]
        return z[: self._nb][b], z[self._nb : 2 * self._nb][b]

    @staticmethod
    def _exciter_inputs(sig: dict, grp: DeviceGroup) -> tuple:
        return ({n: grp.take(sig[n]) for n in grp.model.inputs},) if grp.model.inputs else ()

    def f(self, x, z, p):
        groups, gen_bus = self.layout.groups, self.layout.gen_bus
        vr, vi, id_, iq = self._split(z)
        vt = jnp.sqrt(vr[gen_bus] ** 2 + vi[gen_bus] ** 2)
        _, omega = self.machine_signals(x)
        efd, tm = p["efd"], p["tm"]
        for grp in groups["governor"]:
            tm = grp.put(tm, grp.model.output(grp.states(x), grp.take(omega), grp.view(p)))
        sig = self.signals(x, z, p, omega, tm) if self.layout.needs_signals() else {}
        for grp in groups["exciter"]:
            e = grp.model.output(grp.states(x), grp.take(vt), grp.view(p),
                                 *self._exciter_inputs(sig, grp))  # fmt: skip
            efd = grp.put(efd, e)
        vs = jnp.zeros(self.layout.n_gen)
        for grp in groups["stabilizer"]:
            sig_k = {n: grp.take(v) for n, v in sig.items()}
            vs = grp.put(vs, grp.model.output(grp.states(x), sig_k, grp.view(p)))
        out = []
        for grp in groups["machine"]:
            d = grp.model.derivatives(
                grp.states(x), grp.take(id_), grp.take(iq), grp.take(efd), grp.take(tm),
                grp.view(p), self.omega_s,
            )  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["exciter"]:
            vt_k = grp.take(vt)
            vs_k = grp.take(vs) if groups["stabilizer"] else 0.0 * vt_k
            d = grp.model.derivatives(
                grp.states(x), vt_k, grp.take(p["vref"]), vs_k, grp.view(p),
                *self._exciter_inputs(sig, grp),
            )  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["governor"]:
            d = grp.model.derivatives(grp.states(x), grp.take(omega), grp.take(p["pref"]),
                                      grp.view(p))  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["stabilizer"]:
            sig_k = {n: grp.take(v) for n, v in sig.items()}
            d = grp.model.derivatives(grp.states(x), sig_k, grp.view(p))
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["bus"]:
            d = grp.model.derivatives(grp.states(x), *self._bus_voltage(z, grp), grp.view(p),
                                      self.omega_s)  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        values = jnp.concatenate(out)
        return values[self.layout.order] if self.layout.permute else values

    def injections(self, x, z, p):
        """Machine currents into the network (complex pu, system base) and delta."""
        _, _, id_, iq = self._split(z)
        delta, _ = self.machine_signals(x)
        gr, gi = to_network_frame(id_, iq, delta)
        return p["gen_status"] * p["gen_scale"] * (gr + 1j * gi), delta

    def kcl(self, x, z, p):
        """Complex KCL residual per bus (pu)."""
        nb, lay = self._nb, self.layout
        v = z[:nb] + 1j * z[nb : 2 * nb]
        i_gen, _ = self.injections(x, z, p)
        i_load = zip_current(v[self.load_buses], p["load_g"], p["load_b"], p["load_ip"],
                             p["load_iq"], p["load_pp"], p["load_pq"])  # fmt: skip
        injection = jnp.zeros(nb, dtype=jnp.complex128).at[lay.gen_bus].add(i_gen)
        for grp in lay.groups["bus"]:
            ir, ii = grp.model.current(grp.states(x), *self._bus_voltage(z, grp), grp.view(p),
                                       self.omega_s)  # fmt: skip
            injection = injection.at[lay.bus_of[grp.members]].add(ir + 1j * ii)
        injection = injection.at[self.load_buses].add(-i_load)
        y_shunt = (p["shunt_g"] + p["fault_g"] + p["bus_isolated"]
                   + 1j * (p["shunt_b"] + p["fault_b"]))  # fmt: skip
        return current_mismatch(self.topo, v, injection, y_shunt, p)

    def g(self, x, z, p):
        vr, vi, id_, iq = self._split(z)
        gen_bus, ng = self.layout.gen_bus, self.layout.n_gen
        delta, _ = self.machine_signals(x)
        vd, vq = to_machine_frame(vr[gen_bus], vi[gen_bus], delta)
        res_d, res_q = jnp.zeros(ng), jnp.zeros(ng)
        for grp in self.layout.groups["machine"]:
            rd, rq = grp.model.stator(grp.states(x), grp.take(vd), grp.take(vq),
                                      grp.take(id_), grp.take(iq), grp.view(p))  # fmt: skip
            res_d, res_q = grp.put(res_d, rd), grp.put(res_q, rq)
        on = p["gen_status"]
        mismatch = self.kcl(x, z, p)
        return jnp.concatenate(
            [mismatch.real, mismatch.imag, on * res_d + (1 - on) * id_, on * res_q + (1 - on) * iq]
        )

    def outputs(self, x, z, p):
        vr, vi, _, _ = self._split(z)
        gen_bus = self.layout.gen_bus
        i_gen, delta = self.injections(x, z, p)
        _, omega = self.machine_signals(x)
        pe = vr[gen_bus] * i_gen.real + vi[gen_bus] * i_gen.imag
        measured = []
        for grp in self.layout.groups["bus"]:
            measured += list(grp.model.measure(grp.states(x), *self._bus_voltage(z, grp),
                                               grp.view(p), self.omega_s))  # fmt: skip
        weight = p["gen_status"] * p["gen_inertia"]
        coi = jnp.sum(weight * omega) / jnp.sum(weight)
        kcl_max = jnp.max(jnp.abs(self.kcl(x, z, p)))
        return jnp.concatenate(
            [jnp.sqrt(vr**2 + vi**2), jnp.arctan2(vi, vr), omega, delta, pe, *measured,
             coi[None], kcl_max[None]]
        )  # fmt: skip
