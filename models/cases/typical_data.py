"""Dynamic data by rule: typical machine, exciter, governor, motor and inverter parameters.

``models/data/typical_dynamic_data.json`` holds the values and their sources. A generator's rating
is S_rated = max(loading_margin |Pg + jQg|, min_mva) from its power-flow dispatch (MATPOWER's
``mBase`` is 100 MVA for every machine of the IEEE cases, so it carries no information); its class
(small / medium / large) is the first whose ``max_mva`` exceeds S_rated and gives its machine
data on the machine base. Everything here is validated: a missing or non-physical value is a
``ValueError`` naming the device and the field.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from models.components.validation import number
from models.devices import gfl_inverter as inverter
from models.devices import ieee_dc1a as dc1a
from models.devices import induction_motor as motor
from models.devices import sexs_smooth as sexs
from models.devices import tgov1_smooth as tgov1
from models.devices import two_axis as sm

TYPICAL_DATA_PATH = Path(__file__).resolve().parent.parent / "data" / "typical_dynamic_data.json"
EXCITER_VALIDATORS = {"ieee_dc1a": dc1a.validate_dc1a, "sexs": sexs.validate_sexs}
"""Exciter model name -> validator of its fields."""


def load_typical_data(path: Path | str = TYPICAL_DATA_PATH) -> dict:
    """The raw rule document (JSON)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def validate_typical_data(data: Mapping) -> dict:
    """The validated rule: every block checked by its component's validator."""
    if not isinstance(data, Mapping):
        raise ValueError("typical data: expected a mapping")
    if not str(data.get("source", "")).strip():
        raise ValueError("typical data: field 'source' (the data's reference) is missing")
    rule = data.get("rating_rule")
    if not isinstance(rule, Mapping):
        raise ValueError("typical data: field 'rating_rule' is missing")
    margin = number("typical data, rating_rule", rule, "loading_margin")
    min_mva = number("typical data, rating_rule", rule, "min_mva")
    if not (margin >= 1.0 and min_mva > 0.0):
        raise ValueError("typical data, rating_rule: need loading_margin >= 1 and min_mva > 0")
    classes = data.get("machine_classes")
    if not isinstance(classes, list) or not classes:
        raise ValueError("typical data: field 'machine_classes' must be a non-empty list")
    out_classes: list[dict[str, Any]] = []
    for k, entry in enumerate(classes):
        device = f"typical data, machine class {entry.get('class', k)!r}"
        max_mva = number(device, entry, "max_mva")
        machine = entry.get("machine")
        if not isinstance(machine, Mapping):
            raise ValueError(f"{device}: field 'machine' is missing")
        out_classes.append(
            {
                "class": str(entry.get("class", k)),
                "max_mva": max_mva,
                "machine": sm.validate_two_axis(f"{device}, machine", machine),
                "raw_machine": dict(machine),
            }
        )
    if [c["max_mva"] for c in out_classes] != sorted(c["max_mva"] for c in out_classes):
        raise ValueError("typical data: machine classes must be sorted by max_mva")
    exciters = data.get("exciters")
    if not isinstance(exciters, Mapping):
        raise ValueError("typical data: field 'exciters' is missing")
    out_exc = {}
    for name, validator in EXCITER_VALIDATORS.items():
        if name in exciters:
            out_exc[name] = validator(f"typical data, exciter {name}", exciters[name])
    inv = data.get("inverter", {})
    mot = data.get("motor", {})
    return {
        "loading_margin": margin,
        "min_mva": min_mva,
        "classes": out_classes,
        "exciters": out_exc,
        "governor": tgov1.validate_tgov1("typical data, governor", data.get("governor", {})),
        "motor": motor.validate_motor("typical data, motor", mot),
        "motor_pf": number("typical data, motor", mot, "power_factor_rating"),
        "inverter": inverter.validate_inverter("typical data, inverter", inv),
        "inverter_margin": number("typical data, inverter", inv, "rating_margin"),
        "source": str(data["source"]),
    }


UNDEREXCITED_MARGIN = 2.0
"""A machine absorbing reactive power stays within 1 / UNDEREXCITED_MARGIN of its steady-state
stability limit Q >= -V^2 / Xd (round rotor, per unit on its rating; the under-excitation
capability that limiters enforce): ``machine_rating`` raises the rating of a machine whose
dispatch absorbs more. Without it case9241pegase's gen4295 (33.5 MW, -138 Mvar at 1.04 pu, 178
MVA by the loading margin: -0.78 pu, past the limit V^2 / Xd = 0.60 pu) needs a negative field
voltage (E'q = -0.44) and the network has an unstable mode; IEEE 14-300 machines are not
affected (none absorbs more than half its limit)."""


def machine_rating(
    rule: Mapping, s_gen_mva: float, q_gen_mvar: float = 0.0, v_pu: float = 1.0
) -> float:
    """S_rated (MVA) of a machine dispatched at |S| = ``s_gen_mva`` absorbing ``-q_gen_mvar``
    (Mvar, when negative) at ``v_pu``: the loading-margin rating, raised where needed so that the
    absorbed reactive power is at most 1 / UNDEREXCITED_MARGIN of V^2 / Xd (Xd of the class the
    rating falls in)."""
    rating = max(rule["loading_margin"] * abs(s_gen_mva), rule["min_mva"])
    for _ in range(2):  # a larger rating may fall in a class with another Xd
        xd = machine_class(rule, rating)["machine"]["xd"]
        rating = max(rating, UNDEREXCITED_MARGIN * max(0.0, -q_gen_mvar) * xd / v_pu**2)
    return rating


def machine_class(rule: Mapping, rating_mva: float) -> Mapping:
    """The class entry for a machine of ``rating_mva``."""
    for entry in rule["classes"]:
        if rating_mva < entry["max_mva"]:
            return entry
    return rule["classes"][-1]


def copy_rule(rule: Mapping) -> dict:
    return copy.deepcopy(dict(rule))
