"""Security and input at the API (SQLite, the serverless broker, the real app): tokens (401
missing/wrong, 403 other user), ownership, idempotent submission, validated case uploads, and
the token CLI. The same app serves PostgreSQL in the outage tests."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.cli import app as cli_app
from raptorgrid.tables import ApiToken
from sqlalchemy import select
from typer.testing import CliRunner

MATPOWER_CASE = """function mpc = case3
% a three-bus test case
mpc.version = '2';
mpc.baseMVA = 100;
mpc.bus = [
  1 3 0 0 0 0 1 1.04 0 345 1 1.1 0.9;
  2 2 90 30 0 0 1 1.0 0 345 1 1.1 0.9;
  3 1 100 35 0 0 1 1.0 0 345 1 1.1 0.9;
];
mpc.gen = [
  1 0 0 300 -300 1.04 100 1 250 10;
  2 163 0 300 -300 1.0 100 1 300 10;
];
mpc.branch = [
  1 2 0 0.0576 0 250 250 250 0 0 1 -360 360;
  2 3 0.017 0.092 0.158 250 250 250 0 0 1 -360 360;
];
"""


@pytest.fixture
def app_settings(make_settings):
    settings = make_settings(max_runs_per_campaign=50, max_horizon=10.0, max_case_bytes=4000)
    migrate.upgrade(settings)
    return settings


@pytest.fixture
def client(app_settings):
    with TestClient(create_app(app_settings)) as client:
        yield client


def token_for(client: TestClient, owner: str, *, admin: bool = False) -> dict[str, str]:
    with client.app.state.db.write() as session:
        token = create_token(session=session, owner=owner, is_admin=admin)[1]
    return {"Authorization": f"Bearer {token}"}


def test_writes_need_a_valid_token(client, small_spec) -> None:
    missing = client.post("/campaigns", json=small_spec)
    assert missing.status_code == 401 and "missing API token" in missing.json()["detail"]
    assert missing.headers["www-authenticate"].startswith("Bearer")
    for wrong in ("nonsense", "rg_00000000_guess", "Basic abc"):
        response = client.post(
            "/campaigns", json=small_spec, headers={"Authorization": f"Bearer {wrong}"}
        )
        assert response.status_code == 401, wrong
        assert response.json()["detail"] == "invalid or revoked API token"
    alice = token_for(client, "alice")
    # a token with the right prefix but a changed secret is refused (hash compared, not prefix)
    forged = alice["Authorization"][:-4] + "AAAA"
    assert (
        client.post("/campaigns", json=small_spec, headers={"Authorization": forged}).status_code
        == 401
    )
    assert client.post("/campaigns/1/cancel").status_code == 401
    assert client.delete("/campaigns/1").status_code == 401
    assert client.post("/cases?name=a.m&format=matpower", content=MATPOWER_CASE).status_code == 401


def test_campaigns_belong_to_their_submitter(client, small_spec) -> None:
    alice, bob = token_for(client, "alice"), token_for(client, "bob")
    admin = token_for(client, "root", admin=True)
    created = client.post("/campaigns", json=small_spec, headers=alice)
    assert created.status_code == 201
    campaign_id = created.json()["id"]
    # reads are open by default (docs/security.md); the owner's name is the owner's to see
    assert client.get(f"/campaigns/{campaign_id}").json()["owner"] is None
    assert client.get(f"/campaigns/{campaign_id}", headers=alice).json()["owner"] == "alice"
    forbidden = client.post(f"/campaigns/{campaign_id}/cancel", headers=bob)
    assert forbidden.status_code == 403 and "another user" in forbidden.json()["detail"]
    assert client.delete(f"/campaigns/{campaign_id}", headers=bob).status_code == 403
    running = client.delete(f"/campaigns/{campaign_id}", headers=alice)
    assert running.status_code == 409 and "cancel it first" in running.json()["detail"]
    cancelled = client.post(f"/campaigns/{campaign_id}/cancel", headers=alice).json()
    assert cancelled["status"] == "cancelled" and cancelled["counts"]["cancelled"] == 4
    second = client.post("/campaigns", json=small_spec, headers=bob).json()["id"]
    assert client.post(f"/campaigns/{second}/cancel", headers=admin).status_code == 200
    assert client.delete(f"/campaigns/{campaign_id}", headers=alice).status_code == 204
    assert client.get(f"/campaigns/{campaign_id}").status_code == 404
    assert client.delete(f"/campaigns/{second}", headers=admin).status_code == 204


def test_tokens_are_stored_hashed_and_can_be_revoked(client, small_spec) -> None:
    headers = token_for(client, "carol")
    token = headers["Authorization"].removeprefix("Bearer ")
    with client.app.state.db.read() as session:
        row = session.scalars(select(ApiToken).where(ApiToken.owner == "carol")).one()
    assert token not in (row.token_hash, row.prefix) and len(row.token_hash) == 64
    from raptorgrid.auth import revoke_token

    with client.app.state.db.write() as session:
        assert revoke_token(session=session, prefix=row.prefix)
    assert client.post("/campaigns", json=small_spec, headers=headers).status_code == 401


def test_reads_can_require_a_token(make_settings, small_spec) -> None:
    settings = make_settings(read_requires_token=True)
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        assert client.get("/campaigns/1").status_code == 401
        assert client.get("/runs/1").status_code == 401
        assert client.get("/health").status_code == 200  # health stays open for probes
        assert client.get("/campaigns/1", headers=token_for(client, "dan")).status_code == 404


def test_bootstrap_admin_token_from_settings(make_settings, small_spec) -> None:
    settings = make_settings(admin_token="s3cret-from-the-environment")
    migrate.upgrade(settings)
    assert "RAPTORGRID_ADMIN_TOKEN" not in settings.as_env()  # never passed to workers
    with TestClient(create_app(settings)) as client:
        headers = {"Authorization": "Bearer s3cret-from-the-environment"}
        created = client.post("/campaigns", json=small_spec, headers=headers)
        assert created.status_code == 201
        read = client.get(f"/campaigns/{created.json()['id']}", headers=headers)
        assert read.json()["owner"] == "admin"


def test_idempotent_submission(client, small_spec) -> None:
    alice = token_for(client, "alice")
    keyed = {**alice, "Idempotency-Key": "plan-2026-12-02-a"}
    first = client.post("/campaigns", json=small_spec, headers=keyed)
    assert first.status_code == 201
    retry = client.post("/campaigns", json=small_spec, headers=keyed)
    assert retry.status_code == 200 and retry.json() == first.json()
    # key order in the body does not matter
    reordered = dict(reversed(list(small_spec.items())))
    assert client.post("/campaigns", json=reordered, headers=keyed).json() == first.json()
    changed = {**small_spec, "t_end": 0.9}
    conflict = client.post("/campaigns", json=changed, headers=keyed)
    assert conflict.status_code == 409
    assert "Idempotency-Key 'plan-2026-12-02-a' was already used" in conflict.json()["detail"]
    # keys are per owner: bob's same key is a new campaign
    bob = {**token_for(client, "bob"), "Idempotency-Key": "plan-2026-12-02-a"}
    assert (
        client.post("/campaigns", json=small_spec, headers=bob).json()["id"] != first.json()["id"]
    )
    # without a key, every POST creates a campaign
    assert (
        client.post("/campaigns", json=small_spec, headers=alice).json()["id"] != first.json()["id"]
    )
    bad = client.post("/campaigns", json=small_spec, headers={**alice, "Idempotency-Key": "a b"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == [
        "header",
        "Idempotency-Key",
    ]


def test_case_upload_is_validated_as_data(client) -> None:
    alice = token_for(client, "alice")
    url = "/cases?name=case3.m&format=matpower"
    stored = client.post(url, content=MATPOWER_CASE, headers=alice)
    assert stored.status_code == 201, stored.text
    body = stored.json()
    assert body["summary"] == {"base_mva": 100.0, "n_bus": 3, "n_gen": 2, "n_branch": 2}
    assert client.get(f"/cases/{body['id']}").json()["sha256"] == body["sha256"]

    def refused(content: str | bytes, query: str = url, status: int = 422) -> str:
        response = client.post(query, content=content, headers=alice)
        assert response.status_code == status, response.text
        detail = response.json()["detail"][0]
        assert detail["loc"][0] in ("body", "query")
        return ".".join(map(str, detail["loc"])) + ": " + detail["msg"]

    assert "limited to 4000 bytes" in refused("%" * 5000, status=413)
    assert "no 'function mpc" in refused("disp('hello'); system('rm -rf /')")
    assert "mpc.gen.row 1: bus 9 is not in mpc.bus" in refused(
        MATPOWER_CASE.replace("  1 0 0 300", "  9 0 0 300")
    )
    assert "'x' is not a number" in refused(MATPOWER_CASE.replace("345 1 1.1", "x 1 1.1", 1))
    assert "not UTF-8" in refused(b"\xff\xfe function mpc = x")
    assert "query.format" in refused(MATPOWER_CASE, "/cases?name=c.m&format=gams")
    assert "query.name" in refused(MATPOWER_CASE, "/cases?name=../etc/passwd&format=matpower")
    pp_url = "/cases?name=net.json&format=pandapower"
    assert "invalid JSON" in refused("{", pp_url)
    evil = {
        "_module": "pandapower.auxiliary",
        "_class": "pandapowerNet",
        "_object": {"bus": {"_module": "os", "_class": "system", "_object": "rm -rf /"}},
    }
    assert "os.system is not allowed" in refused(json.dumps(evil), pp_url)


def test_pandapower_case_upload(make_settings) -> None:
    import pandapower as pp
    import pandapower.networks as pn

    settings = make_settings()
    migrate.upgrade(settings)
    document = pp.to_json(pn.case9())
    with TestClient(create_app(settings)) as client:
        response = client.post(
            "/cases?name=case9.json&format=pandapower",
            content=document,
            headers=token_for(client, "alice"),
        )
    assert response.status_code == 201, response.text
    summary = response.json()["summary"]
    assert summary["n_bus"] == 9 and summary["n_gen"] == 2 and summary["n_line"] == 9


def test_token_cli(make_settings, monkeypatch) -> None:
    settings = make_settings()
    migrate.upgrade(settings)
    for key, value in settings.as_env().items():
        monkeypatch.setenv(key, value)
    runner = CliRunner()
    created = runner.invoke(cli_app, ["token", "create", "erin", "--admin"], catch_exceptions=False)
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[0]
    assert token.startswith("rg_") and "shown once" in created.stderr
    listed = runner.invoke(cli_app, ["token", "list"], catch_exceptions=False).stdout
    assert "erin  admin  active" in listed and token not in listed
    prefix = token.split("_")[1]
    assert runner.invoke(cli_app, ["token", "revoke", prefix]).exit_code == 0
    assert runner.invoke(cli_app, ["token", "revoke", prefix]).exit_code != 0


def _cost(call):  # noqa: ANN001, ANN202
    """(response, CPU seconds, peak traced MB) of one request through the in-process app."""
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.process_time()
    try:
        response = call()
        cpu = time.process_time() - start
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    return response, cpu, peak


def test_hostile_bodies_cost_little_and_never_5xx(make_settings, small_spec) -> None:
    """NaN/Infinity are 422 naming the field (not a 500 from an unencodable echo); a 100,000-deep
    array is 413; a body over the limit is 413 from its Content-Length, unread; an anonymous
    write is 401 before its body is read. Each costs well under 1 s of CPU and 100 MB."""
    settings = make_settings(max_request_bytes=1_000_000)
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        auth = token_for(client, "mallory")
        json_headers = {**auth, "Content-Type": "application/json"}
        cases = {
            "nan": json.dumps({**small_spec, "t_end": float("nan")}),
            "infinity": json.dumps(
                {**small_spec, "initial_conditions": {"count": 2, "spread": float("inf")}}
            ),
            "deep": "[" * 100_000 + "]" * 100_000,
            "large": " " * 50_000_000,
        }
        outcomes = {}
        for name, body in cases.items():
            payload = body.encode()
            response, cpu, peak = _cost(
                lambda payload=payload: client.post(
                    "/campaigns", content=payload, headers=json_headers
                )
            )
            outcomes[name] = response
            assert response.status_code < 500, (name, response.text[:200])
            assert cpu < 1.0 and peak < 100 + len(payload) / 1e6, (name, cpu, peak)
        assert outcomes["nan"].status_code == 422
        assert outcomes["nan"].json()["detail"][0]["loc"] == ["body", "t_end"]
        assert outcomes["infinity"].json()["detail"][0]["loc"] == [
            "body",
            "initial_conditions",
            "spread",
        ]
        assert outcomes["deep"].status_code == 413 and outcomes["large"].status_code == 413
        anonymous = client.post("/campaigns", content=b"x" * 5_000_000)
        assert anonymous.status_code == 401 and "missing API token" in anonymous.json()["detail"]


def test_writes_past_an_owners_rate_get_429_with_retry_after(make_settings, small_spec) -> None:
    """A token bucket per owner: a burst of writes, then 429 with Retry-After; another owner
    is not affected, and reads never are."""
    settings = make_settings(write_rate_per_minute=6.0, write_burst=3)
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        alice, bob = token_for(client, "alice"), token_for(client, "bob")
        codes = [client.post("/campaigns/999/cancel", headers=alice).status_code for _ in range(4)]
        assert codes == [404, 404, 404, 429]  # three pass the limiter (then 404), one does not
        refused = client.post("/campaigns/999/cancel", headers=alice)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert "at most 6 per minute" in refused.json()["detail"]
        assert client.post("/campaigns/999/cancel", headers=bob).status_code == 404
        assert client.get("/campaigns").status_code == 200
