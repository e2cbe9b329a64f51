"""Bounded work per request, before any route runs (a pure ASGI middleware).

* A write (POST, PUT, PATCH, DELETE) without an ``Authorization`` header is answered 401 before
  its body is read: an anonymous client cannot make the API buffer or parse anything.
* A body larger than ``max_request_bytes`` is refused with 413: at once when its
  ``Content-Length`` says so, else as soon as the streamed bytes pass the limit (reading stops).
* A JSON body (every media type FastAPI parses as JSON: ``application/json`` and
  ``application/*+json``, in any case, with any parameters) is checked once here, in a worker
  thread (not on the event loop): NaN and +-Infinity (which Python's parser accepts, and which
  then made the validation error's echo of the input unencodable: a 500) are refused with 422
  naming the field, and so are strings with a NUL or a lone surrogate
  (``raptorgrid.text_checks``: PostgreSQL refuses the one, every encoder the other); nesting
  deeper than ``max_json_depth`` is refused with 413 (a 100,000-deep array made the parser
  recurse into a 500).

Everything else (validation, the campaign's size, ownership) is the routes' business.
"""

from __future__ import annotations

import email.message
import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from raptorgrid.text_checks import find_invalid_text

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_json_media_type(content_type: str) -> bool:
    """Whether FastAPI parses a body of this ``Content-Type`` as JSON (its own rule: the main
    type ``application`` and the subtype ``json`` or ``*+json``, case-insensitive)."""
    if not content_type:
        return False  # FastAPI's strict_content_type: a body without a type is not JSON
    message = email.message.Message()
    message["content-type"] = content_type
    if message.get_content_maintype() != "application":
        return False
    subtype = message.get_content_subtype()
    return subtype == "json" or subtype.endswith("+json")


class _NonFinite(float):
    """Marks a NaN or Infinity constant found by the parser (its location is found after)."""


def _reject_constant(name: str) -> _NonFinite:
    return _NonFinite("nan")


def _find(document: Any, max_depth: int) -> tuple[str, list] | None:
    """('depth' | 'nonfinite', location) of the first problem in ``document``, or None; an
    explicit stack, so no recursion however deep the document is."""
    stack: list[tuple[Any, list]] = [(document, [])]
    while stack:
        value, loc = stack.pop()
        if len(loc) > max_depth:
            return "depth", loc
        if isinstance(value, _NonFinite):
            return "nonfinite", loc
        if isinstance(value, dict):
            stack.extend((v, [*loc, k]) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, [*loc, i]) for i, v in enumerate(value))
    return None


class RequestLimits:
    def __init__(self, app: ASGIApp, *, max_bytes: int, max_depth: int) -> None:
        self.app, self.max_bytes, self.max_depth = app, max_bytes, max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in WRITE_METHODS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", ())}
        if "authorization" not in headers:
            await _answer(
                send,
                401,
                "missing API token: send 'Authorization: Bearer <token>'",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await _answer(send, 413, self._too_large())
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.extend(message.get("body", b""))
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await _answer(send, 413, self._too_large())
                return
        content_type = headers.get("content-type", b"").decode("latin-1")
        if body and is_json_media_type(content_type):
            problem = await run_in_threadpool(self._check_json, bytes(body))
            if problem is not None:
                status, detail = problem
                await _answer(send, status, detail)
                return
        await self.app(scope, _replay(bytes(body)), send)

    def _too_large(self) -> str:
        return f"the request body exceeds {self.max_bytes} bytes (setting max_request_bytes)"

    def _check_json(self, body: bytes) -> tuple[int, Any] | None:
        try:
            document = json.loads(body, parse_constant=_reject_constant)
        except RecursionError:
            return 413, f"the JSON body is nested more than {self.max_depth} levels deep"
        except ValueError:
            return None  # malformed JSON: FastAPI answers it with its own 422
        found = _find(document, self.max_depth)
        if found is None:
            text = find_invalid_text(document)
            if text is None:
                return None
            loc, reason = text
            return 422, [{"loc": ["body", *loc], "msg": reason, "type": "string_type"}]
        kind, loc = found
        if kind == "depth":
            return 413, f"the JSON body is nested more than {self.max_depth} levels deep"
        return 422, [
            {
                "loc": ["body", *loc],
                "msg": "NaN and Infinity are not numbers this API accepts: give a finite value",
                "type": "finite_number",
            }
        ]


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _answer(
    send: Send, status: int, detail: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
