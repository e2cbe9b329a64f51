"""The planners' PSS/E pairs through the API: IEEE 14 (full dynamic data: GENROU, EXST1,
ESST3A, IEEEG1, TGOV1, IEEEST, ST2CUT), IEEE 39 (the repaired pair, tests/data/psse/README.md),
NPCC 140-bus and WECC 179-bus (every model supported, WECC's eight ESDC2A exciters included, no
substitution) are uploaded, an N-1 campaign over every branch is created on each, and its first
runs solve."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.db import Database
from raptorgrid.tables import Run
from sqlalchemy import select

from tests.psse_crosscheck import DATA
from workers.runner import WorkerContext, execute_run

CASES = {
    "ieee14": ("ieee14.raw", "ieee14.dyr"),
    "ieee39": ("ieee39_repaired.raw", "ieee39_repaired.dyr"),
    "npcc": ("npcc.raw", "npcc_full.dyr"),
    "wecc": ("wecc.raw", "wecc_full.dyr"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_n1_campaign_on_an_uploaded_pair(make_settings, name: str) -> None:
    from models.library import build_system

    raw, dyr = CASES[name]
    settings = make_settings()
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        with client.app.state.db.write() as session:
            token = create_token(session=session, owner="planner")[1]
        client.headers["Authorization"] = f"Bearer {token}"
        body = {"raw": (DATA / raw).read_text(), "dyr": (DATA / dyr).read_text(),
                "raw_file": raw, "dyr_file": dyr, "substitute": False}  # fmt: skip
        stored = client.post(f"/cases?name={name}&format=psse", content=json.dumps(body))
        assert stored.status_code == 201, stored.text
        case = stored.json()
        assert "left out" not in json.dumps(case), case  # every model runs, none substituted
        network = case["network"]
        n_branches = len(build_system(network).names["branch"])
        spec = {
            "name": f"{name} N-1",
            "network": network,
            "t_end": 0.5,
            "n_eval": 26,
            "generate": [{"kind": "branch_trips", "t": 0.1}],
            "methods": [{"method": "radau", "options": {"rtol": 1e-4}}],
        }
        created = client.post("/campaigns", json=spec)
        assert created.status_code == 201, created.text
        assert created.json()["n_runs"] == n_branches > 15
        campaign_id = created.json()["id"]
    db = Database.from_settings(settings)
    try:
        with db.read() as session:
            first = list(session.scalars(
                select(Run.id).where(Run.campaign_id == campaign_id).order_by(Run.id).limit(2)
            ))  # fmt: skip
        context = WorkerContext(settings=settings, db=db)
        assert [execute_run(r, worker="t", ctx=context) for r in first] == ["succeeded"] * 2
    finally:
        db.dispose()
