"""Who reads what (docs/security.md, "Who may do what"): with ``read_requires_token`` every read
of campaigns, runs, trajectories, statistics and cases is limited to its owner and admins;
campaigns run only on their owner's or shared uploaded cases; tracebacks, server paths and
worker hosts reach admins only; failed authentications are rate-limited per client."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid import repository as repo
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.tables import utcnow

from solvers.status import FailureReason, RunStatus
from tests.psse_crosscheck import DATA

KUNDUR = {
    "raw": (DATA / "kundur.raw").read_text(),
    "dyr": (DATA / "kundur_genrou_tgov1.dyr").read_text(),
}
CASE_SPEC = {
    "name": "kundur line trip",
    "t_end": 1.0,
    "n_eval": 51,
    "disturbances": [{"kind": "none"}],
    "methods": [{"method": "radau"}],
}
SERVER_PATH = "/srv/raptorgrid/data/zarr/campaign_1.zarr/run_1"
WORKER = "celery@node-17.internal:4242"


def token_for(client: TestClient, owner: str, *, admin: bool = False) -> dict[str, str]:
    with client.app.state.db.write() as session:
        token = create_token(session=session, owner=owner, is_admin=admin)[1]
    return {"Authorization": f"Bearer {token}"}


def fail_a_run(client: TestClient, campaign_id: int) -> int:
    """The campaign's first run, claimed by ``WORKER`` and failed with a traceback and a message
    naming a server path (as an internal error records them)."""
    db = client.app.state.db
    with db.read() as session:
        rows, _ = repo.list_runs(session=session, campaign_id=campaign_id, limit=1, offset=0)
    run = rows[0][0]
    with db.write() as session:
        claim = repo.claim_run(
            session=session, run_id=run.id, worker=WORKER, now=utcnow(), lease_seconds=60.0,
            max_attempts=3,
        )  # fmt: skip
        assert claim is not None
        repo.finish_run(
            session=session, run_id=run.id, attempt=claim.attempt, status=RunStatus.FAILED,
            now=utcnow(), reason=FailureReason.INTERNAL_ERROR.value,
            message=f"FileNotFoundError: [Errno 2] No such file or directory: '{SERVER_PATH}'",
            traceback=f'Traceback (most recent call last):\n  File "{SERVER_PATH}.py", line 3',
        )  # fmt: skip
    return run.id


@pytest.fixture
def isolated(make_settings):
    settings = make_settings(read_requires_token=True, max_horizon=10.0)
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def public(make_settings):
    settings = make_settings(max_horizon=10.0)
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        yield client


def test_tokens_read_only_their_owners_campaigns_runs_and_cases(isolated, small_spec) -> None:
    """Before: with READ_REQUIRES_TOKEN=true any token read every campaign, run, trajectory,
    statistic and case (bob read alice's campaign with 200)."""
    client = isolated
    alice, bob = token_for(client, "alice"), token_for(client, "bob")
    admin = token_for(client, "root", admin=True)
    mine = client.post("/campaigns", json=small_spec, headers=alice).json()["id"]
    theirs = client.post("/campaigns", json=small_spec, headers=bob).json()["id"]
    run_id = fail_a_run(client, mine)
    case = client.post(
        "/cases?name=kundur&format=psse", content=json.dumps(KUNDUR), headers=alice
    ).json()["id"]

    reads = [
        f"/campaigns/{mine}",
        f"/campaigns/{mine}/runs",
        f"/campaigns/{mine}/stats",
        f"/campaigns/{mine}/stats/table1",
        f"/campaigns/{mine}/stats/pareto",
        f"/campaigns/{mine}/stats/ranking",
        f"/campaigns/{mine}/stats/failures",
        f"/runs/{run_id}",
        f"/runs/{run_id}/variables",
        f"/runs/{run_id}/trajectory?vars=omega",
        f"/cases/{case}",
    ]
    for path in reads:
        refused = client.get(path, headers=bob)
        assert refused.status_code == 404, (path, refused.status_code, refused.text)
        assert "not found" in refused.json()["detail"], path
        for who in (alice, admin):
            assert client.get(path, headers=who).status_code in (200, 409), path
    # the list holds the caller's campaigns only (filtered and counted in SQL), all for an admin
    listed = client.get("/campaigns", headers=bob).json()
    assert [c["id"] for c in listed["data"]] == [theirs] and listed["count"] == 1
    everything = client.get("/campaigns", headers=admin).json()
    assert {c["id"] for c in everything["data"]} == {mine, theirs} and everything["count"] == 2


def test_campaigns_run_only_on_their_owners_or_shared_cases(isolated) -> None:
    """Before: bob's campaign on alice's uploaded case was accepted (201)."""
    client = isolated
    alice, bob = token_for(client, "alice"), token_for(client, "bob")
    admin = token_for(client, "root", admin=True)
    stored = client.post(
        "/cases?name=kundur&format=psse", content=json.dumps(KUNDUR), headers=alice
    )
    assert stored.status_code == 201, stored.text
    case = stored.json()
    spec = {**CASE_SPEC, "network": case["network"]}

    refused = client.post("/campaigns", json=spec, headers=bob)
    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"][0]
    assert detail["loc"] == ["body", "network"]
    assert f"no uploaded case {case['id']} that you own or that is shared" in detail["msg"]
    # the same answer as for a case that does not exist: nothing about alice's case leaks
    missing = client.post("/campaigns", json={**spec, "network": "case:999"}, headers=bob)
    assert (
        "no uploaded case 999 that you own or that is shared" in missing.json()["detail"][0]["msg"]
    )

    # only an admin shares a case; then anyone may run on it
    assert case["shared"] is False
    share = f"/cases/{case['id']}/share"
    assert client.post(share, headers=alice).status_code == 403
    shared = client.post(share, headers=admin)
    assert shared.status_code == 200 and shared.json()["shared"] is True
    assert client.get(f"/cases/{case['id']}", headers=bob).status_code == 200
    assert client.post("/campaigns", json=spec, headers=bob).status_code == 201
    unshared = client.post(f"{share}?shared=false", headers=admin)
    assert unshared.status_code == 200 and unshared.json()["shared"] is False
    assert client.post("/campaigns", json=spec, headers=bob).status_code == 422
    assert client.post("/campaigns", json=spec, headers=alice).status_code == 201


def test_anonymous_reads_show_no_owner_spec_traceback_path_or_host(public, small_spec) -> None:
    """Before: an unauthenticated GET showed the owner's name, the full spec, the traceback with
    server paths and the worker's host:pid. Reads stay open by default."""
    client = public
    alice = token_for(client, "alice")
    admin = token_for(client, "root", admin=True)
    campaign_id = client.post("/campaigns", json=small_spec, headers=alice).json()["id"]
    run_id = fail_a_run(client, campaign_id)

    campaign = client.get(f"/campaigns/{campaign_id}")
    assert campaign.status_code == 200
    assert campaign.json()["owner"] is None and campaign.json()["spec"] is None
    for body in (
        client.get(f"/runs/{run_id}").json(),
        client.get(f"/campaigns/{campaign_id}/runs").json()["data"][0],
        client.get(f"/campaigns/{campaign_id}/stats/failures").json()["data"][0],
    ):
        text = json.dumps(body)
        assert "/srv/" not in text and "node-17" not in text and "Traceback" not in text, text
        assert "No such file or directory" in body["message"]  # the reason stays
    # the owner and an admin see their campaign whole; only an admin sees where it failed
    assert client.get(f"/campaigns/{campaign_id}", headers=alice).json()["owner"] == "alice"
    assert client.get(f"/campaigns/{campaign_id}", headers=alice).json()["spec"]["name"] == "small"
    assert client.get(f"/runs/{run_id}", headers=alice).json()["traceback"] is None
    full = client.get(f"/runs/{run_id}", headers=admin).json()
    assert full["worker"] == WORKER and SERVER_PATH in full["traceback"]
    assert SERVER_PATH in full["message"]


def test_failed_authentications_are_rate_limited_per_client(make_settings, small_spec) -> None:
    """Before: any number of wrong tokens were answered 401, never slowed down."""
    settings = make_settings(auth_failure_burst=3, auth_failures_per_minute=6.0)
    migrate.upgrade(settings)
    app = create_app(settings)
    with TestClient(app, client=("203.0.113.7", 5000)) as guesser:
        alice = token_for(guesser, "alice")
        wrong = {"Authorization": "Bearer rg_00000000_guess"}
        codes = [guesser.post("/campaigns", json=small_spec, headers=wrong).status_code
                 for _ in range(4)]  # fmt: skip
        assert codes == [401, 401, 401, 429]
        refused = guesser.get("/campaigns", headers=wrong)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert "failed authentications from this client" in refused.json()["detail"]
        # the client is refused even with a valid token until its bucket refills
        assert guesser.post("/campaigns", json=small_spec, headers=alice).status_code == 429
    with TestClient(app, client=("198.51.100.2", 5000)) as other:
        assert other.post("/campaigns", json=small_spec, headers=alice).status_code == 201
        assert other.get("/campaigns", headers=wrong).status_code == 401
