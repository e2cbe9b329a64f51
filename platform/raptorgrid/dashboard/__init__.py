"""The results dashboard: plain HTML + JS + CSS files served by the API under ``/dashboard``
(no build step, no CDN). The page reads the results API and draws its plots as inline SVG."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, RedirectResponse

STATIC = Path(__file__).parent / "static"
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.get("/dashboard")
def dashboard_root() -> RedirectResponse:
    return RedirectResponse("/dashboard/")


@router.get("/dashboard/")
def dashboard_index() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/dashboard/{name}")
def dashboard_file(name: str) -> FileResponse:
    path = STATIC / name
    if path.suffix not in _TYPES or path.parent != STATIC or not path.is_file():
        raise HTTPException(status_code=404, detail=f"no dashboard file {name!r}")
    return FileResponse(path, media_type=_TYPES[path.suffix])
