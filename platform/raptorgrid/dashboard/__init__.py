"""The results dashboard: plain HTML + JS + CSS files served by the API under ``/dashboard``
(no build step, no CDN). The page reads the results API and draws its charts with Plotly.js,
whose bundle is the ``plotly.min.js`` shipped inside the ``plotly`` Python package (a project
dependency) and served from here as ``/dashboard/vendor/plotly.min.js``."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, RedirectResponse

STATIC = Path(__file__).parent / "static"
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
VENDOR_CACHE = "public, max-age=86400"
"""The vendored bundle changes only with the installed ``plotly`` (its ETag and Last-Modified
come from the file), so browsers may keep it a day without asking."""

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@functools.cache
def plotly_bundle() -> Path | None:
    """``plotly/package_data/plotly.min.js`` of the installed ``plotly`` package, found without
    importing it (None when the package or the file is missing)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    return path if path.is_file() else None


@router.get("/dashboard")
def dashboard_root() -> RedirectResponse:
    return RedirectResponse("/dashboard/")


@router.get("/dashboard/")
def dashboard_index() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/dashboard/vendor/plotly.min.js")
def dashboard_plotly() -> FileResponse:
    path = plotly_bundle()
    if path is None:
        raise HTTPException(
            status_code=404,
            detail="plotly.min.js not found: install the plotly package (a raptorgrid dependency)",
        )
    return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": VENDOR_CACHE})


@router.get("/dashboard/{name}")
def dashboard_file(name: str) -> FileResponse:
    path = STATIC / name
    if path.suffix not in _TYPES or path.parent != STATIC or not path.is_file():
        raise HTTPException(status_code=404, detail=f"no dashboard file {name!r}")
    return FileResponse(path, media_type=_TYPES[path.suffix])
