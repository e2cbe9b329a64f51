"""Typed dependencies: the settings, a read session, a write session, and the enqueuer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from celery import Celery
from fastapi import Depends, Request
from sqlalchemy.orm import Session

from raptorgrid.db import Database
from raptorgrid.settings import Settings


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_db(request: Request) -> Database:
    return request.app.state.db


def get_celery(request: Request) -> Celery:
    return request.app.state.celery


def get_session(db: Annotated[Database, Depends(get_db)]) -> Iterator[Session]:
    with db.read() as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
DatabaseDep = Annotated[Database, Depends(get_db)]
CeleryDep = Annotated[Celery, Depends(get_celery)]
SessionDep = Annotated[Session, Depends(get_session)]
