"""PSS/E cases through the platform: uploaded through the API (or ``raptorgrid case add``),
refused with the file, line and record named and nothing stored, and run as the network of an
N-1 campaign by a real worker (PostgreSQL + Redis), RAPTOR included."""

from __future__ import annotations

import json

import pytest
from conftest import run_campaign_through_api
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.tables import CaseFile
from sqlalchemy import func, select

from tests.psse_crosscheck import DATA

KUNDUR = {
    "raw": (DATA / "kundur.raw").read_text(),
    "dyr": (DATA / "kundur_genrou_tgov1.dyr").read_text(),
    "raw_file": "kundur.raw",
    "dyr_file": "kundur_genrou_tgov1.dyr",
}
URL = "/cases?name=kundur&format=psse"
ESST4B = "1 'ESST4B' 1 0.02 20.0 0.02 1.0 /\n"
"""An exciter model not supported (yet), for machine 1 (line 21 of the pair's .dyr)."""


def _authorize(client: TestClient) -> None:
    """A token of owner ``t``, the owner ``run_campaign_through_api`` submits as: a campaign may
    run only on its owner's (or a shared) uploaded case."""
    with client.app.state.db.write() as session:
        client.headers["Authorization"] = f"Bearer {create_token(session=session, owner='t')[1]}"


def _stored(client: TestClient) -> int:
    with client.app.state.db.read() as session:
        return session.scalar(select(func.count()).select_from(CaseFile))


def test_bad_pairs_are_refused_naming_file_line_and_record(make_settings) -> None:
    settings = make_settings()
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        _authorize(client)

        def refused(document: dict) -> tuple[list, str]:
            response = client.post(URL, content=json.dumps(document))
            assert response.status_code == 422, response.text
            detail = response.json()["detail"][0]
            return detail["loc"], detail["msg"]

        bad_raw = KUNDUR["raw"].replace("5.00000E-3, 5.00000E-2", "5.00000E-3, oops", 1)
        loc, msg = refused({**KUNDUR, "raw": bad_raw})
        assert loc == ["body", "raw", "line 24"]
        assert msg == "kundur.raw, line 24 (branch data): field X = 'oops' is not a number"
        loc, msg = refused({**KUNDUR, "dyr": KUNDUR["dyr"] + ESST4B})
        assert loc == ["body", "dyr"] and "ESST4B (line 21)" in msg
        loc, msg = refused({**KUNDUR, "dyr": "1 'GENROU' 1 8 0.03 /\n"})
        assert loc == ["body", "dyr", "line 1"] and "GENROU has 14 values" in msg
        loc, _ = refused({**KUNDUR, "substitute": "yes"})
        assert loc == ["body", "substitute"]
        loc, _ = refused({"raw": KUNDUR["raw"]})
        assert loc == ["body", "dyr"]
        assert _stored(client) == 0  # nothing stored

        substituted = client.post(
            URL,
            content=json.dumps({**KUNDUR, "dyr": KUNDUR["dyr"] + ESST4B, "substitute": True}),
        )
        assert substituted.status_code == 201, substituted.text
        body = substituted.json()
        assert body["network"] == f"case:{body['id']}"
        assert body["summary"]["models"] == ["GENROU", "TGOV1"]
        warnings = body["summary"]["warnings"]
        assert any("ESST4B exciter at lines 21 left out" in w for w in warnings), warnings
        missing = client.post("/campaigns", json={**SPEC, "network": "case:999"})
        assert missing.status_code == 422, missing.text
        assert missing.json()["detail"][0]["loc"][-1] == "network"
        assert "no uploaded case 999" in missing.json()["detail"][0]["msg"]


SPEC = {
    "name": "kundur N-1 from PSS/E files",
    "t_end": 1.0,
    "n_eval": 51,
    "generate": [{"kind": "branch_trips", "t": 0.2}],
    "methods": [{"method": "raptor", "options": {"rtol": 1e-5}}, {"method": "radau"}],
}


@pytest.mark.services
@pytest.mark.slow
def test_n1_campaign_on_an_uploaded_case(
    make_settings, postgres_url, redis_url, redis_queue, start_worker
) -> None:
    settings = make_settings(database_url=postgres_url, broker_url=redis_url, queue=redis_queue)
    migrate.upgrade(settings)
    worker = start_worker(settings, "psse")
    with TestClient(create_app(settings)) as client:
        _authorize(client)
        stored = client.post(URL, content=json.dumps(KUNDUR))
        assert stored.status_code == 201, stored.text
        network = stored.json()["network"]
        created = run_campaign_through_api(client, {**SPEC, "network": network}, [worker], 300)
        assert created["n_runs"] == 2 * 15  # 11 lines + 4 transformers, two methods
        campaign = client.get(f"/campaigns/{created['id']}").json()
        assert campaign["counts"]["succeeded"] == 30, worker.log()[-3000:]
        runs = client.get(f"/campaigns/{created['id']}/runs", params={"limit": 100}).json()["data"]
        assert {r["method"] for r in runs} == {"raptor", "radau"}


def test_case_add_stores_locally_and_refuses_bad_files(tmp_path, monkeypatch) -> None:
    """``raptorgrid case add`` on the embedded default (no API): the stored case's network
    name is printed; a refused pair is a user error (exit 2) naming file and lines."""
    from raptorgrid.cli import app
    from typer.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def add(*args: str):
        return runner.invoke(app, ["case", "add", *args], catch_exceptions=False)

    ok = add("kundur", "--raw", str(DATA / "kundur.raw"), "--dyr",
             str(DATA / "kundur_genrou_tgov1.dyr"))  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "case 1 stored: 10 buses, 4 machines (GENROU, TGOV1)" in ok.output
    assert "network: case:1" in ok.output
    esst4b = tmp_path / "kundur_full.dyr"  # kundur_full.dyr with an unsupported exciter
    esst4b.write_text((DATA / "kundur_full.dyr").read_text().replace("'EXDC2 '", "'ESST4B'"))
    pair = ("--raw", str(DATA / "kundur.raw"), "--dyr", str(esst4b))
    bad = add("kundur_full", *pair)
    assert bad.exit_code == 2
    assert "ESST4B (lines 4, 13, 22, 31)" in bad.output and "Traceback" not in bad.output
    substituted = add("kundur_full", *pair, "--substitute")
    assert substituted.exit_code == 0, substituted.output
    assert "case 2 stored: 10 buses, 4 machines" in substituted.output
    assert "warning:" in substituted.output and "ESST4B exciter" in substituted.output
