"""Dynamic device models in the PSS(R)E model library's terms, each with its equations and its
initialization from the power-flow solution beside them (``base.DeviceModel``); ``MODELS`` maps
the ``.dyr`` model names to them. ``models.assembly`` turns a network and device instances into
one ``DAESystem``."""

from models.devices.base import DeviceModel
from models.devices.exst1 import EXST1
from models.devices.gencls import GENCLS
from models.devices.genrou import GENROU
from models.devices.ieeeg1 import IEEEG1
from models.devices.ieeex1 import IEEEX1
from models.devices.sexs import SEXS
from models.devices.tgov1 import TGOV1

MODELS: dict[str, DeviceModel] = {
    m.name: m for m in (EXST1, GENCLS, GENROU, IEEEG1, IEEEX1, SEXS, TGOV1)
}
"""Supported ``.dyr`` model names -> models."""

__all__ = [
    "EXST1",
    "GENCLS",
    "GENROU",
    "IEEEG1",
    "IEEEX1",
    "MODELS",
    "SEXS",
    "TGOV1",
    "DeviceModel",
]
