"""/solvers: the method catalogue (names, option schemas with defaults, guidance)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from solvers.catalogue import catalogue

router = APIRouter(prefix="/solvers", tags=["solvers"])


@router.get("")
def list_solvers() -> list[dict[str, Any]]:
    return catalogue()
