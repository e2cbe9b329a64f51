"""The OpenAPI schema fuzzed with schemathesis against the real app (ASGI, SQLite, serverless
broker), with a valid token: no request gets a 5xx, every 422 names its field (``loc``) and
every other 4xx says what is wrong. The number of generated requests is logged."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token

schemathesis = pytest.importorskip("schemathesis")

log = logging.getLogger(__name__)
MAX_EXAMPLES = 140
"""Per operation (19 operations: at least MIN_REQUESTS in all, ~30 s on two cores)."""


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory):
    from raptorgrid.settings import Settings

    app_settings = Settings(
        data_dir=tmp_path_factory.mktemp("fuzz"),
        max_runs_per_campaign=20,
        max_horizon=2.0,
        write_burst=1_000_000,  # the writes reach the routes (the limiter is tested on its own)
    )
    migrate.upgrade(app_settings)
    app = create_app(app_settings)
    with app.state.db.write() as session:
        token = create_token(session=session, owner="fuzzer")[1]
    yield app, token
    app.state.db.dispose()


SMALL_NETWORKS = ("wscc9", "ieee14", "emt_sm", "dq_smib")
"""Networks a generated campaign may name: the schema's enum lists every library network, and
validating a campaign builds its network (minutes for the PEGASE cases)."""
MIN_REQUESTS = 2000


def small(case):  # noqa: ANN001, ANN201 - a schemathesis Case
    """A generated campaign body on a small network (the schema's enum makes it a valid name)."""
    body = getattr(case, "body", None)
    name = body.get("network") if isinstance(body, dict) else None
    if isinstance(name, str) and not name.startswith("case:") and name not in SMALL_NETWORKS:
        body["network"] = SMALL_NETWORKS[len(name) % len(SMALL_NETWORKS)]
    return case


def check(case, token: str, sent: list[int], created: list[str]) -> None:  # noqa: ANN001
    response = case.call(headers={"Authorization": f"Bearer {token}"})
    sent.append(response.status_code)
    if case.method == "POST" and case.path == "/campaigns" and response.status_code == 201:
        created.append(case.body["network"])
    assert response.status_code < 500, f"{case.method} {case.path}: {response.text[:500]}"
    if 400 <= response.status_code < 500:
        detail = response.json().get("detail")
        assert detail, f"{case.method} {case.path}: {response.text}"
        if response.status_code == 422:
            assert all(d.get("loc") for d in detail), detail


@pytest.mark.slow
def test_api_fuzz(fuzz_app) -> None:
    app, token = fuzz_app
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    sent: list[int] = []
    created: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:

        @given(case=operation.as_strategy().map(small))
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def fuzz(case) -> None:  # noqa: ANN001
            check(case, token, sent, created)

        fuzz()
    codes = {c: sent.count(c) for c in sorted(set(sent))}
    log.warning(
        "schemathesis: %d generated requests over %d operations, status codes %s; "
        "%d campaigns created",
        len(sent),
        len(operations),
        codes,
        len(created),
    )
    assert len(sent) >= MIN_REQUESTS, (len(sent), codes)
    # the schema's enums make valid bodies: POST /campaigns is exercised, not only refused
    assert created, codes
