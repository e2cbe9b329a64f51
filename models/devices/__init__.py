"""Dynamic device models, each with its equations and its initialization from the power-flow
solution beside them (``base.DeviceModel``): the PSS(R)E model library's (``MODELS`` maps the
``.dyr`` model names to them; per unit on MBASE) and the project's models of the MATPOWER cases
and wscc9 (``PROJECT_MODELS``; per unit on the system base, without limits so f stays smooth).
``models.assembly`` turns a network and device instances into one ``DAESystem``."""

from models.devices.base import DeviceModel
from models.devices.cim5 import CIM5
from models.devices.esac1a import ESAC1A
from models.devices.esdc2a import ESDC2A
from models.devices.esst1a import ESST1A
from models.devices.esst3a import ESST3A
from models.devices.exac1 import EXAC1
from models.devices.exdc2 import EXDC2
from models.devices.exst1 import EXST1
from models.devices.gast import GAST
from models.devices.gencls import GENCLS
from models.devices.genrou import GENROU
from models.devices.gensal import GENSAL
from models.devices.gfl_inverter import GFL_INVERTER
from models.devices.hygov import HYGOV
from models.devices.ieee_dc1a import IEEE_DC1A
from models.devices.ieeeg1 import IEEEG1
from models.devices.ieeest import IEEEST
from models.devices.ieeet1 import IEEET1
from models.devices.ieeex1 import IEEEX1
from models.devices.ieesgo import IEESGO
from models.devices.induction_motor import INDUCTION_MOTOR
from models.devices.pvd1 import PVD1
from models.devices.reeca1 import REECA1
from models.devices.regca1 import REGCA1
from models.devices.repca1 import REPCA1
from models.devices.scrx import SCRX
from models.devices.sexs import SEXS
from models.devices.sexs_smooth import SEXS_SMOOTH
from models.devices.sixth_order import SIXTH_ORDER
from models.devices.st2cut import ST2CUT
from models.devices.tgov1 import TGOV1
from models.devices.tgov1_smooth import TGOV1_SMOOTH
from models.devices.two_axis import TWO_AXIS

MODELS: dict[str, DeviceModel] = {
    m.name: m
    for m in (CIM5, ESAC1A, ESDC2A, ESST1A, ESST3A, EXAC1, EXDC2, EXST1, GAST, GENCLS, GENROU,
              GENSAL,
              HYGOV, IEEEG1, IEEEST, IEEET1, IEEEX1, IEESGO, PVD1, REECA1, REGCA1, REPCA1, SCRX,
              SEXS, ST2CUT, TGOV1)
}  # fmt: skip
"""Supported ``.dyr`` model names -> models."""
PROJECT_MODELS: dict[str, DeviceModel] = {
    m.name: m
    for m in (GFL_INVERTER, IEEE_DC1A, INDUCTION_MOTOR, SEXS_SMOOTH, SIXTH_ORDER, TGOV1_SMOOTH,
              TWO_AXIS)
}  # fmt: skip
"""The project's models by name (the ``CaseConfig`` names of the MATPOWER builder)."""

__all__ = [
    "CIM5",
    "ESAC1A",
    "ESDC2A",
    "ESST1A",
    "ESST3A",
    "EXAC1",
    "EXDC2",
    "EXST1",
    "GAST",
    "GENCLS",
    "GENROU",
    "GENSAL",
    "GFL_INVERTER",
    "HYGOV",
    "IEEEG1",
    "IEEEST",
    "IEEET1",
    "IEEEX1",
    "IEEE_DC1A",
    "IEESGO",
    "INDUCTION_MOTOR",
    "MODELS",
    "PROJECT_MODELS",
    "PVD1",
    "REECA1",
    "REGCA1",
    "REPCA1",
    "SCRX",
    "SEXS",
    "SEXS_SMOOTH",
    "SIXTH_ORDER",
    "ST2CUT",
    "TGOV1",
    "TGOV1_SMOOTH",
    "TWO_AXIS",
    "DeviceModel",
]
