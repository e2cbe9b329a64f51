"""The model library: the semi-explicit index-1 DAE contract, networks, components and disturbances.

Import-light on purpose: ``models.dae`` holds the contract; cases are built on demand through
``models.library`` so that importing the contract does not import pandapower.
"""

from models.dae import DAESystem, Event, ParameterChange, Scenario

__all__ = ["DAESystem", "Event", "ParameterChange", "Scenario"]
