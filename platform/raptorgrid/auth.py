"""API tokens: issue, verify, revoke. Only the sha256 of a token is stored.

A token reads ``rg_<prefix>_<secret>``: the prefix (8 hex characters) finds the row, the sha256
of the whole token is compared in constant time (``hmac.compare_digest``), so neither a database
leak nor response timing reveals a usable token. A bootstrap admin token may also come from the
environment (``RAPTORGRID_ADMIN_TOKEN``), never from the repository.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from raptorgrid.tables import ApiToken, utcnow

TOKEN_PREFIX = "rg_"
BOOTSTRAP_OWNER = "admin"
"""Owner name of the environment's bootstrap admin token."""


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: campaigns belong to ``owner``; an admin may act on any."""

    owner: str
    is_admin: bool


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _prefix_of(token: str) -> str | None:
    if not token.startswith(TOKEN_PREFIX):
        return None
    prefix, sep, secret = token[len(TOKEN_PREFIX) :].partition("_")
    return prefix if sep and len(prefix) == 8 and secret else None


def create_token(
    *, session: Session, owner: str, is_admin: bool = False, now: datetime | None = None
) -> tuple[ApiToken, str]:
    """Store a new token for ``owner``; returns the row and the token (shown once, never kept)."""
    owner = owner.strip()
    if not owner or len(owner) > 100:
        raise ValueError("a token owner is 1-100 characters")
    prefix = secrets.token_hex(4)
    token = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiToken(
        owner=owner,
        prefix=prefix,
        token_hash=hash_token(token),
        is_admin=is_admin,
        created_at=now or utcnow(),
    )
    session.add(row)
    session.flush()
    return row, token


def verify_token(*, session: Session, token: str, bootstrap: str | None = None) -> Principal | None:
    """The principal of ``token``, or None when it is unknown, malformed or revoked."""
    if bootstrap and hmac.compare_digest(hash_token(token), hash_token(bootstrap)):
        return Principal(owner=BOOTSTRAP_OWNER, is_admin=True)
    prefix = _prefix_of(token)
    if prefix is None:
        return None
    row = session.scalars(
        select(ApiToken).where(ApiToken.prefix == prefix, ApiToken.revoked_at.is_(None))
    ).first()
    if row is None or not hmac.compare_digest(row.token_hash, hash_token(token)):
        return None
    return Principal(owner=row.owner, is_admin=row.is_admin)


def revoke_token(*, session: Session, prefix: str, now: datetime | None = None) -> bool:
    """Revoke the token with ``prefix``; False when no active token has it."""
    changed = session.execute(
        update(ApiToken)
        .where(ApiToken.prefix == prefix, ApiToken.revoked_at.is_(None))
        .values(revoked_at=now or utcnow())
        .execution_options(synchronize_session=False)
    )
    return changed.rowcount == 1


def list_tokens(*, session: Session) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).order_by(ApiToken.id)))
