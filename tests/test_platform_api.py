"""The HTTP API over SQLite and the serverless broker: validation errors name the field and
list the valid values; campaigns, runs, solvers and health read back what was stored."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.queueing import queue_depth


@pytest.fixture
def settings(make_settings):
    s = make_settings(max_runs_per_campaign=50, max_horizon=10.0)
    migrate.upgrade(s)
    return s


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as client:
        client.headers["Authorization"] = f"Bearer {issue_token(client, 'alice')}"
        yield client


def issue_token(client: TestClient, owner: str, *, admin: bool = False) -> str:
    """A new API token for ``owner`` in the app's database (as ``raptorgrid token create``)."""
    with client.app.state.db.write() as session:
        return create_token(session=session, owner=owner, is_admin=admin)[1]


def errors_of(response) -> list[dict]:
    assert response.status_code == 422, response.text
    return response.json()["detail"]


def error_at(response, loc: list) -> str:
    details = errors_of(response)
    for detail in details:
        if detail["loc"] == loc:
            return detail["msg"]
    raise AssertionError(f"no error at {loc}: {details}")


def test_malformed_spec_names_the_field(client, small_spec) -> None:
    small_spec["t_end"] = "soon"
    del small_spec["methods"]
    response = client.post("/campaigns", json=small_spec)
    assert "number" in error_at(response, ["body", "t_end"])
    assert error_at(response, ["body", "methods"]) == "Field required"


def test_unknown_field_is_refused(client, small_spec) -> None:
    small_spec["colour"] = "blue"
    assert "Extra inputs" in error_at(
        client.post("/campaigns", json=small_spec), ["body", "colour"]
    )


def test_unknown_method_lists_valid_methods(client, small_spec) -> None:
    small_spec["methods"] = [{"method": "magic"}]
    message = error_at(client.post("/campaigns", json=small_spec), ["body", "methods", 0, "method"])
    assert "unknown method 'magic'" in message and "'radau'" in message


def test_bad_option_in_a_sweep_names_the_option(client, small_spec) -> None:
    small_spec["methods"] = [{"method": "radau", "options": {"rtol": [1e-4, 5.0]}}]
    message = error_at(
        client.post("/campaigns", json=small_spec), ["body", "methods", 0, "options"]
    )
    assert "rtol=5.0" in message and "rtol:" in message


def test_unknown_bus_lists_valid_buses(client, small_spec) -> None:
    small_spec["disturbances"][0]["bus"] = "bus99"
    message = error_at(
        client.post("/campaigns", json=small_spec), ["body", "disturbances", 0, "bus"]
    )
    assert "bus99" in message and "'bus7'" in message


def test_unknown_network_lists_valid_networks(client, small_spec) -> None:
    small_spec["network"] = "atlantis"
    message = error_at(client.post("/campaigns", json=small_spec), ["body", "network"])
    assert "'wscc9'" in message


def test_unknown_disturbance_kind(client, small_spec) -> None:
    small_spec["disturbances"] = [{"kind": "meteor"}]
    details = errors_of(client.post("/campaigns", json=small_spec))
    assert details[0]["loc"][:3] == ["body", "disturbances", 0]
    assert "bus_fault" in details[0]["msg"]


def test_limits_are_clear_refusals(client, small_spec) -> None:
    small_spec["t_end"] = 100.0
    small_spec["initial_conditions"]["count"] = 30
    response = client.post("/campaigns", json=small_spec)
    assert "limited to 10.0 s" in error_at(response, ["body", "t_end"])
    message = error_at(response, ["body", "methods"])
    assert "60 runs" in message and "limit is 50" in message


def test_sweeps_are_counted_before_they_are_formed(client, small_spec) -> None:
    """Three options of 100 values would be 10^6 configurations: refused from the lengths,
    quickly, naming the field; and one option may not list more than 100 values."""
    import time

    values = [1e-3 * (1 + i / 1000) for i in range(100)]
    small_spec["methods"] = [
        {"method": "radau", "options": {"rtol": values, "atol": values, "first_step": values}}
    ]
    start = time.process_time()
    response = client.post("/campaigns", json=small_spec)
    cpu = time.process_time() - start
    message = error_at(response, ["body", "methods", 0, "options"])
    assert "1000000 configurations" in message and "limit is 1000" in message
    assert cpu < 2.0  # not formed and validated one by one (that took minutes)
    small_spec["methods"] = [{"method": "radau", "options": {"rtol": values + [1e-4]}}]
    message = error_at(
        client.post("/campaigns", json=small_spec), ["body", "methods", 0, "options"]
    )
    assert "101 values" in message and "at most 100" in message


def test_event_after_horizon(client, small_spec) -> None:
    small_spec["disturbances"][0].update(t_fault=1.5, t_clear=1.6)
    message = error_at(client.post("/campaigns", json=small_spec), ["body", "disturbances", 0])
    assert "after the horizon" in message


def test_submit_and_read_back(client, settings, small_spec) -> None:
    response = client.post("/campaigns", json=small_spec)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["n_runs"] == 4 and created["n_scenarios"] == 2
    campaign_id = created["id"]
    assert queue_depth(client.app.state.celery, queue=settings.queue) == 4  # after commit

    campaign = client.get(f"/campaigns/{campaign_id}").json()
    assert campaign["status"] == "running" and campaign["counts"]["queued"] == 4
    assert campaign["spec"]["name"] == "small" and campaign["progress"] == 0.0

    page = client.get(f"/campaigns/{campaign_id}/runs", params={"limit": 3}).json()
    assert page["count"] == 4 and len(page["data"]) == 3
    rest = client.get(f"/campaigns/{campaign_id}/runs", params={"limit": 3, "offset": 3}).json()
    assert len(rest["data"]) == 1
    assert (
        client.get(f"/campaigns/{campaign_id}/runs", params={"status": "succeeded"}).json()["count"]
        == 0
    )
    assert (
        client.get(f"/campaigns/{campaign_id}/runs", params={"method": "radau"}).json()["count"]
        == 4
    )
    assert (
        client.get(f"/campaigns/{campaign_id}/runs", params={"status": "done"}).status_code == 422
    )

    run = client.get(f"/runs/{page['data'][0]['id']}").json()
    assert run["status"] == "queued" and run["metrics"] is None
    assert run["scenario"]["disturbance"]["bus"] == "bus7"
    assert run["options"] == {"rtol": 0.001}

    stats = client.get(f"/campaigns/{campaign_id}/stats").json()
    assert [m["config"] for m in stats["methods"]] == ["rtol=0.001", "rtol=1e-05"]


def test_not_found_names_the_id(client) -> None:
    assert client.get("/campaigns/424242").json()["detail"] == "campaign 424242 not found"
    assert client.get("/campaigns/424242/runs").status_code == 404
    assert client.get("/runs/777").json()["detail"] == "run 777 not found"


def test_cancel(client, small_spec) -> None:
    campaign_id = client.post("/campaigns", json=small_spec).json()["id"]
    cancelled = client.post(f"/campaigns/{campaign_id}/cancel").json()
    assert cancelled["status"] == "cancelled" and cancelled["counts"]["cancelled"] == 4
    assert cancelled["finished_at"] is not None


def test_solvers_and_health(client) -> None:
    names = [m["name"] for m in client.get("/solvers").json()]
    assert "radau" in names
    health = client.get("/health").json()
    assert health == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
        "store": "ok",
        "store_free_bytes": health["store_free_bytes"],
        "version": health["version"],
    }
    assert health["store_free_bytes"] > 0


def test_health_names_what_is_down_and_nothing_about_it(make_settings, tmp_path) -> None:
    """A dead broker or an unusable results store: 503, that component ``unavailable``, the
    others ``ok``, and no URL, host, port or driver text in the public body."""
    from fastapi.testclient import TestClient
    from raptorgrid import migrate
    from raptorgrid.api import create_app
    from reliability_stack import free_port

    port = free_port()  # nothing listens there
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for overrides, down in (
        ({"broker_url": f"redis://127.0.0.1:{port}/0"}, "broker"),
        ({"zarr_root": blocker / "zarr"}, "store"),
    ):
        settings = make_settings(**overrides)
        migrate.upgrade(settings)
        with TestClient(create_app(settings)) as client:
            response = client.get("/health")
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "unavailable" and body[down] == "unavailable"
        assert all(body[k] == "ok" for k in ("database", "broker", "store") if k != down)
        text = response.text
        assert str(port) not in text and "127.0.0.1" not in text and "Error" not in text


def test_source_switch_names_the_offending_field(client, small_spec) -> None:
    small_spec["network"] = "emt_sm"
    small_spec["t_end"] = 0.2
    small_spec["disturbances"] = [{"kind": "source_switch", "source": "grid", "load": "nowhere"}]
    message = error_at(
        client.post("/campaigns", json=small_spec), ["body", "disturbances", 0, "load"]
    )
    assert "nowhere" in message and "'term'" in message


def test_source_switch_without_optional_elements_is_accepted(client, small_spec) -> None:
    small_spec["network"] = "emt_sm"
    small_spec["t_end"] = 0.2
    small_spec["disturbances"] = [{"kind": "source_switch", "t": 0.05}]
    response = client.post("/campaigns", json=small_spec)
    assert response.status_code in (200, 201, 202), response.text


def test_a_campaign_says_it_is_paused_while_its_runs_wait_for_store_space(client, small_spec):
    """Runs handed back because the results store was full (``workers.attempt``) make the
    campaign say why it is not progressing; once they run again it no longer does."""
    from raptorgrid import repository as repo
    from raptorgrid.tables import Run
    from sqlalchemy import select, update

    created = client.post("/campaigns", json=small_spec)
    assert created.status_code == 201, created.text
    campaign_id = created.json()["id"]
    assert client.get(f"/campaigns/{campaign_id}").json()["paused"] is None
    with client.app.state.db.write() as session:
        ids = session.scalars(select(Run.id).where(Run.campaign_id == campaign_id)).all()[:2]
        session.execute(
            update(Run).where(Run.id.in_(ids)).values(message=f"{repo.STORE_FULL} (No space)")
        )
    paused = client.get(f"/campaigns/{campaign_id}").json()["paused"]
    assert paused is not None and "2 run(s) wait for space" in paused
    with client.app.state.db.write() as session:
        session.execute(update(Run).where(Run.id.in_(ids)).values(status="running"))
    assert client.get(f"/campaigns/{campaign_id}").json()["paused"] is None
