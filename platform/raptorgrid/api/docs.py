"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) without a CDN.

FastAPI's own pages load their JavaScript and CSS from a CDN, so they are blank offline. The app
is created with ``docs_url=None, redoc_url=None`` and ``install(app)`` adds the same pages with
the assets served by the app itself from ``/docs/static/``: the Swagger UI 5 and ReDoc 2 files
shipped inside the ``fastapi-offline`` package (a project dependency; only its files are used).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import FileResponse, HTMLResponse

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
STATIC_URL = "/docs/static"
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}
"""The files served under ``STATIC_URL``, by name, with their media types."""


def assets_dir() -> Path:
    """The ``static`` folder of the installed ``fastapi_offline`` package (not imported)."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the fastapi-offline package (a raptorgrid dependency) is missing")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def install(app: FastAPI) -> None:
    """Add ``/docs``, its OAuth2 redirect, ``/redoc`` and their local assets to ``app``."""
    folder = assets_dir()
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect_url = app.swagger_ui_oauth2_redirect_url or f"{DOCS_URL}/oauth2-redirect"

    @app.get(f"{STATIC_URL}/{{name}}", include_in_schema=False)
    def docs_asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise HTTPException(status_code=404, detail=f"no docs asset {name!r}")
        return FileResponse(
            folder / name,
            media_type=ASSETS[name],
            headers={"Cache-Control": "public, max-age=86400"},
        )

    @app.get(DOCS_URL, include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{oauth2_redirect_url}",
            swagger_js_url=f"{root}{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters,
        )

    @app.get(oauth2_redirect_url, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC_URL, include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{STATIC_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            with_google_fonts=False,
        )
