"""The equations of an assembled network: f (device derivatives), g (KCL and the machines'
stator equations) and the outputs, each device model evaluated once per group.

Layout of z: bus voltages Vr, Vi (pu, system base), then machine currents Id, Iq (pu on MBASE);
g: real and imaginary KCL per bus (``models.network``), then the d and q stator residuals per
machine (a tripped machine, ``gen_status`` 0, has Id = Iq = 0 instead). A converter's slot holds
its delivered currents there instead: Id = Ip along its terminal voltage V, Iq the reactive part
(injected current (Ip - j Iq) V / |V|, so P = |V| Ip, Q = |V| Iq), with the residuals Ip - Ipout,
Iq - Iqout of its output currents (``DeviceModel.current``); its delta and omega outputs are 0
and 1. Outputs: bus V and theta,
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
from models.network import Topology, branch_currents, current_mismatch


def plant_inputs(lay: Layout, grp: DeviceGroup, v, p, topo: Topology) -> dict:
    """A plant-control group's inputs (``models.devices.repca1.PLANT_SIGNALS``) from the complex
    bus voltages ``v`` and the branch and ``gen_scale`` parameters ``p``: the voltage of its
    generator's bus, the current (system base) leaving the measured end (``branch_end`` 0: from,
    1: to) of its ``branch`` (-1: none, all 0) and that end's power (MBASE)."""
    branch = np.asarray(grp.params["branch"], dtype=np.int64)
    at_to = np.asarray(grp.params["branch_end"]) == 1
    has = branch >= 0
    k = np.where(has, branch, 0)
    vreg = v[lay.gen_bus[grp.members]]
    i_from, i_to = branch_currents(topo, v, p)
    ib = jnp.where(at_to, i_to[k], i_from[k]) * has
    vb = jnp.where(at_to, v[topo.to_bus[k]], v[topo.from_bus[k]])
    s = vb * jnp.conj(ib) / p["gen_scale"][grp.members]
    return {"vreg_r": vreg.real, "vreg_i": vreg.imag, "ibr_r": ib.real, "ibr_i": ib.imag,
            "pbr": s.real, "qbr": s.imag}  # fmt: skip


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
        if self.layout.has_converters():
            out += self._converter_derivatives(x, z, p, vt)
        for grp in groups["bus"]:
            d = grp.model.derivatives(grp.states(x), *self._bus_voltage(z, grp), grp.view(p),
                                      self.omega_s)  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        values = jnp.concatenate(out)
        return values[self.layout.order] if self.layout.permute else values

    def _converter_derivatives(self, x, z, p, vt) -> list:
        """Derivatives of the converters, their electrical and their plant controls (in that
        order): plant outputs Pref, Qref drive the electrical controls, whose Ipcmd, Iqcmd drive
        the converters (held values where a control is absent)."""
        groups = self.layout.groups
        _, _, id_, iq = self._split(z)
        sig = {"vt": vt, "pe": vt * id_, "qe": vt * iq}
        pref, qref = p["conv_pref"], p["conv_qref"]
        plant_sig = {}
        if groups["plant"]:
            nb = self._nb
            v = z[:nb] + 1j * z[nb : 2 * nb]
            for grp in groups["plant"]:
                plant_sig[grp.model.name] = {
                    **{n: grp.take(a) for n, a in sig.items()},
                    **plant_inputs(self.layout, grp, v, p, self.topo),
                }
                pr, qr = grp.model.output(grp.states(x), plant_sig[grp.model.name], grp.view(p))
                pref, qref = grp.put(pref, pr), grp.put(qref, qr)
        ipcmd, iqcmd = p["conv_ipcmd"], p["conv_iqcmd"]
        for grp in groups["electrical"]:
            sig_k = {n: grp.take(a) for n, a in sig.items()}
            ic, qc = grp.model.output(grp.states(x), sig_k, grp.take(pref), grp.take(qref),
                                      grp.view(p))  # fmt: skip
            ipcmd, iqcmd = grp.put(ipcmd, ic), grp.put(iqcmd, qc)
        out = []
        for grp in groups["converter"]:
            d = grp.model.derivatives(grp.states(x), grp.take(vt), grp.take(ipcmd),
                                      grp.take(iqcmd), grp.view(p),
                                      *self._converter_inputs(z, grp))  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["electrical"]:
            sig_k = {n: grp.take(a) for n, a in sig.items()}
            d = grp.model.derivatives(grp.states(x), sig_k, grp.take(pref), grp.take(qref),
                                      grp.view(p))  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["plant"]:
            d = grp.model.derivatives(grp.states(x), plant_sig[grp.model.name], grp.view(p))
            out.append(jnp.stack(d, axis=1).ravel())
        return out

    def _converter_inputs(self, z, grp: DeviceGroup) -> tuple:
        """The extra argument of a converter that names ``inputs`` (e.g. PVD1, which measures
        its bus frequency): its terminal voltage's ``vr``, ``vi`` (pu, network frame)."""
        if not grp.model.inputs:
            return ()
        nb, gen_bus = self._nb, self.layout.gen_bus
        return ({"vr": grp.take(z[:nb][gen_bus]), "vi": grp.take(z[nb : 2 * nb][gen_bus])},)

    def injections(self, x, z, p):
        """Machine (and converter) currents into the network (complex pu, system base), and
        delta."""
        _, _, id_, iq = self._split(z)
        delta, _ = self.machine_signals(x)
        gr, gi = to_network_frame(id_, iq, delta)
        if self.layout.has_converters():
            conv = self._converter_mask()
            nb, gen_bus = self._nb, self.layout.gen_bus
            vr, vi = z[:nb][gen_bus], z[nb : 2 * nb][gen_bus]
            vm = jnp.sqrt(vr**2 + vi**2)
            ur, ui = vr / vm, vi / vm
            gr = jnp.where(conv, id_ * ur + iq * ui, gr)
            gi = jnp.where(conv, id_ * ui - iq * ur, gi)
        return p["gen_status"] * p["gen_scale"] * (gr + 1j * gi), delta

    def _converter_mask(self) -> np.ndarray:
        mask = np.zeros(self.layout.n_gen, dtype=bool)
        for grp in self.layout.groups["converter"]:
            mask[grp.members] = True
        return mask

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
        for grp in self.layout.groups["converter"]:
            v_k = jnp.sqrt(grp.take(vr[gen_bus]) ** 2 + grp.take(vi[gen_bus]) ** 2)
            ip, iq_out = grp.model.current(grp.states(x), v_k, grp.view(p))
            res_d, res_q = grp.put(res_d, grp.take(id_) - ip), grp.put(res_q, grp.take(iq) - iq_out)
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
