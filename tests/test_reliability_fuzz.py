"""The OpenAPI schema fuzzed with schemathesis against the real app (ASGI, SQLite, serverless
broker), with a valid token: no request gets a 5xx, every 422 names its field (``loc``) and
every other 4xx says what is wrong. The number of generated requests is logged."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


CONTROL_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x9F), max_size=12)
"""Query values of C0 and C1 control characters (NUL included) and ASCII."""
UPLOAD_TEXT = st.one_of(
    st.text(max_size=200),
    st.text(st.sampled_from("[]{}\",:0.5 \x00\n;mpc=/'"), max_size=400),
    st.integers(1, 20_000).map(lambda n: "[" * n + "]" * n),
)
"""Upload bodies sent as text/plain: any text, JSON- and MATPOWER-like punctuation, and deep
brackets."""


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.services)]
)
def strings_app(request, tmp_path_factory):
    """The app on SQLite and on PostgreSQL (which refuses NUL in text), with a token and one
    campaign to read, so that every query filter reaches the database."""
    from raptorgrid import repository as repo
    from raptorgrid.settings import Settings
    from raptorgrid.spec import CampaignCreate, Expansion, RunPlan, ScenarioPlan
    from raptorgrid.tables import utcnow

    overrides = {}
    if request.param == "postgresql":
        overrides["database_url"] = request.getfixturevalue("session_postgres_url")
    app_settings = Settings(
        data_dir=tmp_path_factory.mktemp("fuzz-strings"), write_burst=1_000_000, **overrides
    )
    migrate.upgrade(app_settings)
    app = create_app(app_settings)
    spec = CampaignCreate(name="c", network="wscc9", t_end=1.0, methods=[{"method": "radau"}])
    plan = Expansion([ScenarioPlan(0, {"kind": "none"}, 0, 0.0, "none#0")],
                     [RunPlan(0, "radau", {}, "default")])  # fmt: skip
    with app.state.db.write() as session:
        token = create_token(session=session, owner="fuzzer")[1]
        campaign, _ = repo.create_campaign(session=session, spec=spec, expansion=plan, now=utcnow())
        campaign_id = campaign.id
    yield app, token, campaign_id
    app.state.db.dispose()


@pytest.mark.slow
def test_api_fuzz_control_characters_and_text_uploads(strings_app) -> None:
    """Every operation with its string query values replaced by control characters (NUL
    included; campaign routes mostly on a stored campaign, so that filters reach the database),
    and the upload route with text/plain bodies of any text: never a 5xx."""
    app, token, campaign_id = strings_app
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    sent: list[int] = []
    for operation in (result.ok() for result in schema.get_all_operations()):
        upload = operation.method.upper() == "POST" and operation.path == "/cases"
        if not upload and not any(p.location == "query" for p in operation.iter_parameters()):
            continue

        @given(case=operation.as_strategy().map(small), data=st.data())
        @settings(
            max_examples=60,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def fuzz(case, data) -> None:  # noqa: ANN001
            upload = case.method.upper() == "POST" and case.path == "/cases"
            if "campaign_id" in (case.path_parameters or {}):  # mostly the stored campaign
                case.path_parameters["campaign_id"] = data.draw(
                    st.sampled_from([campaign_id, campaign_id, case.path_parameters["campaign_id"]])
                )
            for name, value in list((case.query or {}).items()):
                if isinstance(value, str) and not upload:
                    case.query[name] = data.draw(CONTROL_TEXT)
            if upload:
                case.media_type = "text/plain"
                case.body = data.draw(UPLOAD_TEXT)
            check(case, token, sent, [])

        fuzz()
    codes = {c: sent.count(c) for c in sorted(set(sent))}
    log.warning("schemathesis, control characters and text uploads: %d requests, %s",
                len(sent), codes)  # fmt: skip
    assert sent and not any(code >= 500 for code in codes), codes
