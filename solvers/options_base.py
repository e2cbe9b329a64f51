"""The base of every method's options model: unknown keys refused with a "did you mean"."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from models.naming import unknown_name


class StrictOptions(BaseModel):
    """Frozen options that refuse unknown keys, naming the closest valid options (pydantic's
    own extra-forbidden error only says the key is not permitted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if key not in cls.model_fields:
                    raise ValueError(unknown_name("option", key, sorted(cls.model_fields)))
        return data
