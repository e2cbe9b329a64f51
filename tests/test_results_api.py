"""Done criterion of the results issue: a campaign with RAPTOR, Radau and a reference, solved by
the task body, yields through the API a Table I, a Pareto front and a contingency ranking whose
numbers this test recomputes on its own from the Zarr trajectories (xarray + solvers.metrics).
Also: filters, pagination, trajectories, the dashboard files."""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.db import Database
from raptorgrid.settings import Settings
from raptorgrid.zarr_store import campaign_store

from solvers.metrics import normalized_state_error
from workers.runner import WorkerContext, execute_run

pytestmark = pytest.mark.slow

THRESHOLDS = {"state_error": 1e-4, "voltage_mae": 1e-5, "kcl_max": 1e-6}
SPEC = {
    "name": "table-one",
    "network": "wscc9",
    "t_end": 1.0,
    "n_eval": 101,
    "disturbances": [
        {"kind": "bus_fault", "bus": "bus7", "t_fault": 0.1, "t_clear": 0.25},
        {"kind": "bus_fault", "bus": "bus5", "t_fault": 0.1, "t_clear": 0.15},
        {"kind": "branch_trip", "branch": "br_5_6", "t": 0.1},
    ],
    "methods": [
        {"method": "raptor"},
        {"method": "radau", "options": {"rtol": [1e-3, 1e-7]}},
    ],
    "reference": {"method": "radau", "options": {"rtol": 1e-11, "atol": 1e-13}},
    "thresholds": THRESHOLDS,
}
"""3 scenarios x (raptor + 2 radau + reference) = 12 runs; a Radau reference keeps the test
short (the default Kvaerno5 reference compiles for ~25 s on this machine)."""

ADMIN_TOKEN = "results-test-admin-token"
HEADERS = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
"""Every request sends the bootstrap admin token (reads are open by default; writes need it)."""


def get(client: TestClient, path: str, **params) -> dict:
    response = client.get(path, params=params, headers=HEADERS)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """The campaign submitted through the API and solved by the worker's task body."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("results"), admin_token=ADMIN_TOKEN)
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        created = client.post("/campaigns", json=SPEC, headers=HEADERS)
        assert created.status_code == 201, created.text
        campaign_id = created.json()["id"]
        assert created.json()["n_runs"] == 12
        db = Database.from_settings(settings)
        ctx = WorkerContext(settings=settings, db=db)
        runs = get(client, f"/campaigns/{campaign_id}/runs", limit=100)["data"]
        for run in reversed(runs):  # references last: the later finisher scores
            execute_run(run["id"], worker="test", ctx=ctx)
        yield client, settings, campaign_id
        db.dispose()


def _independent(settings: Settings, client: TestClient, campaign_id: int):
    """Per run: metrics recomputed from Zarr; per config: runs, times and errors."""
    runs = get(client, f"/campaigns/{campaign_id}/runs", limit=100)["data"]
    store = str(campaign_store(settings.zarr_root, campaign_id))

    def ds(run_id: int) -> xr.Dataset:
        return xr.open_zarr(store, group=f"run_{run_id}").load()

    refs = {r["scenario_id"]: r for r in runs if r["config_label"].startswith("reference")}
    configs: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        if r["config_label"].startswith("reference"):
            continue
        assert r["status"] == "succeeded", r["message"]
        run, ref = ds(r["id"]), ds(refs[r["scenario_id"]]["id"])
        volts = [str(n).startswith("V[") for n in run.output.values]
        entry = {
            "state_error": normalized_state_error(run.x.values, ref.x.values),
            "voltage_mae": float(np.mean(np.abs(run.y.values[:, volts] - ref.y.values[:, volts]))),
            "kcl": float(run.y.sel(output="kcl_max").max()),
            "solve_s": r["metrics"]["solve_seconds"],
        }
        entry["qualified"] = (
            entry["state_error"] <= THRESHOLDS["state_error"]
            and entry["voltage_mae"] <= THRESHOLDS["voltage_mae"]
            and entry["kcl"] <= THRESHOLDS["kcl_max"]
        )
        configs.setdefault((r["method"], r["config_label"]), []).append(entry)
    return configs, refs, ds


def test_table_one_recomputed_from_zarr(campaign) -> None:
    client, settings, campaign_id = campaign
    configs, _, _ = _independent(settings, client, campaign_id)
    summary = {
        key: {
            "time": statistics.median(e["solve_s"] for e in entries),
            "error": max(e["state_error"] for e in entries),
            "qualified": all(e["qualified"] for e in entries),
        }
        for key, entries in configs.items()
    }
    stats = get(client, f"/campaigns/{campaign_id}/stats")
    by_key = {(m["method"], m["config"]): m for m in stats["methods"]}
    assert set(by_key) == set(summary)
    for key, s in summary.items():
        assert by_key[key]["max_state_error"] == pytest.approx(s["error"], rel=1e-9)
        assert by_key[key]["qualified"] == s["qualified"]
        assert by_key[key]["median_runtime_s"] == pytest.approx(s["time"])

    def fastest(method: str):
        ok = [(v["time"], k[1]) for k, v in summary.items() if k[0] == method and v["qualified"]]
        return min(ok) if ok else None

    table = get(client, f"/campaigns/{campaign_id}/stats/table1")
    raptor = fastest("raptor")
    assert raptor is not None, summary  # RAPTOR meets the thresholds on this case
    assert table["subject_config"] == raptor[1]
    radau = fastest("radau")
    (row,) = table["rows"]
    assert row["method"] == "radau" and row["config"] == (radau[1] if radau else None)
    assert row["speedup"] == pytest.approx(radau[0] / raptor[0])
    assert summary[("radau", "rtol=0.001")]["qualified"] is False  # loose Radau is not

    pareto = get(client, f"/campaigns/{campaign_id}/stats/pareto")["points"]
    front = {
        k
        for k, v in summary.items()
        if not any(
            o["time"] <= v["time"]
            and o["error"] <= v["error"]
            and (o["time"] < v["time"] or o["error"] < v["error"])
            for o in summary.values()
        )
    }
    assert {(p["method"], p["config"]) for p in pareto if p["on_front"]} == front


def test_contingency_ranking_recomputed_from_zarr(campaign) -> None:
    client, settings, campaign_id = campaign
    _, refs, ds = _independent(settings, client, campaign_id)
    expected = {}
    for scenario_id, ref in refs.items():
        data = ds(ref["id"])
        names = [str(n) for n in data.output.values]
        delta = data.y.values[:, [n.startswith("delta[") for n in names]]
        volts = data.y.values[:, [n.startswith("V[") for n in names]]
        spread = float(np.degrees((delta.max(axis=1) - delta.min(axis=1)).max()))
        vmin = float(volts.min())
        expected[scenario_id] = (spread, vmin, spread / 360)  # docs/results.md
    ranking = get(client, f"/campaigns/{campaign_id}/stats/ranking")
    assert ranking["count"] == 3
    order = sorted(expected, key=lambda s: -expected[s][2])
    assert [r["scenario_id"] for r in ranking["data"]] == order
    for r in ranking["data"]:
        spread, vmin, severity = expected[r["scenario_id"]]
        assert r["from_reference"] and r["stable"] == (spread < 360)
        assert r["max_angle_spread_deg"] == pytest.approx(spread)
        assert r["min_voltage_pu"] == pytest.approx(vmin)
        assert r["severity"] == pytest.approx(severity)
        tsi = 100 * (360 - spread) / (360 + spread)  # DSATools' transient stability index
        assert r["tsi"] == pytest.approx(tsi) and (r["tsi"] > 0) == r["stable"]
    page = get(client, f"/campaigns/{campaign_id}/stats/ranking", limit=1, offset=1)
    assert page["data"][0]["rank"] == 2 and page["data"][0]["scenario_id"] == order[1]
    faults = get(client, f"/campaigns/{campaign_id}/stats/ranking", kind="bus_fault")
    assert faults["count"] == 2


def test_stats_filters_and_pages(campaign) -> None:
    client, _, campaign_id = campaign
    every = get(client, f"/campaigns/{campaign_id}/stats")
    assert every["count"] == 3 and all(m["runs"] == 3 for m in every["methods"])
    assert every["methods"][0]["method"] == "raptor"
    m = every["methods"][0]
    assert m["success_rate"] == 1.0 and m["min_accepted"] <= m["mean_accepted"] <= m["max_accepted"]
    assert m["median_runtime_s"] <= m["p95_runtime_s"]
    refs = get(client, f"/campaigns/{campaign_id}/stats", include_reference=True)
    assert refs["count"] == 4
    kind = get(client, f"/campaigns/{campaign_id}/stats", kind="branch_trip")
    assert all(m["runs"] == 1 for m in kind["methods"])
    assert get(client, f"/campaigns/{campaign_id}/stats", method="radau")["count"] == 2
    assert get(client, f"/campaigns/{campaign_id}/stats", status="failed")["count"] == 0
    page = get(client, f"/campaigns/{campaign_id}/stats", limit=1, offset=1)
    assert [x["config"] for x in page["methods"]] == [every["methods"][1]["config"]]
    listed = get(client, "/campaigns")["data"][0]
    assert listed["id"] == campaign_id and listed["progress"] == 1.0 and listed["done"] == 12
    assert client.get("/campaigns/999/stats/table1", headers=HEADERS).status_code == 404


def test_trajectory_by_name_with_reference(campaign) -> None:
    client, settings, campaign_id = campaign
    run = get(client, f"/campaigns/{campaign_id}/runs", method="raptor", limit=1)["data"][0]
    body = get(
        client,
        f"/runs/{run['id']}/trajectory",
        vars="delta[gen2],V[bus7]",
        t0=0.05,
        t1=0.6,
        max_points=20,
    )
    assert body["downsampled"] and len(body["time"]) <= 20 * 2
    assert body["time"][0] >= 0.05 and body["time"][-1] <= 0.6
    ds = xr.open_zarr(
        str(campaign_store(settings.zarr_root, campaign_id)), group=f"run_{run['id']}"
    )
    v7 = ds.y.sel(output="V[bus7]").sel(time=slice(0.05, 0.6)).values
    assert min(body["series"]["V[bus7]"]) == pytest.approx(v7.min())  # the dip survives
    assert max(body["series"]["V[bus7]"]) == pytest.approx(v7.max())
    assert body["reference"]["series"]["V[bus7]"] and body["reference"]["run_id"] != run["id"]
    bad = client.get(f"/runs/{run['id']}/trajectory", params={"vars": "nope"}, headers=HEADERS)
    assert bad.status_code == 422 and "delta[gen1]" in bad.json()["detail"]
    listed = {v["name"]: v for v in get(client, f"/runs/{run['id']}/variables")["variables"]}
    assert set(listed) == {str(n) for d in ("state", "algebraic", "output") for n in ds[d].values}
    assert listed["V[bus7]"]["unit"] == "pu" and listed["V[bus7]"]["kind"] == "output"
    assert (listed["delta[gen1]"]["units"], listed["delta[gen1]"]["unit"]) == ("rad", "rad")


def test_dashboard_is_served(campaign) -> None:
    client, _, _ = campaign
    page = client.get("/dashboard/")
    assert page.status_code == 200 and "app.js" in page.text
    assert "vendor/plotly.min.js" in page.text and "http" not in page.text  # no CDN
    assert client.get("/dashboard/app.js").status_code == 200
    assert client.get("/dashboard/../tables.py").status_code == 404
    bundle = client.get("/dashboard/vendor/plotly.min.js")  # the plotly package's own bundle
    assert bundle.status_code == 200, bundle.text[:300]
    assert bundle.headers["content-type"].startswith("text/javascript")
    assert "max-age" in bundle.headers["cache-control"]
    assert len(bundle.content) > 1_000_000 and b"plotly.js v" in bundle.content[:300]


@contextlib.contextmanager
def serve(settings: Settings):
    """The API on a free local port, in a thread of this process (stopped on exit)."""
    import socket
    import threading

    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def chromium(url: str, profile: Path, *extra: str) -> str:
    """Headless Chromium's DOM of ``url`` after its scripts ran (virtual-time budget)."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        if os.environ.get("CI") == "true":  # CI installs it (.ci/run): never skip there
            pytest.fail("chromium is not installed under CI (apt-get install -y chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
        "--virtual-time-budget=15000", *extra, url,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
"""Chromium resolves no host but the local server: a page that needs a CDN breaks under it."""


def _chart(dom: str, element_id: str) -> str:
    """The DOM of one dashboard chart: from its element to the next chart's (or the end)."""
    start = dom.index(f'id="{element_id}"')
    end = dom.find('id="plot-', start + 1)
    return dom[start : end if end > 0 else len(dom)]


def _legend(chart: str) -> list[str]:
    import re

    return re.findall(r'class="legendtext"[^>]*>([^<]*)<', chart)


def _yticks(chart: str) -> list[str]:
    import re

    return re.findall(r'class="ytick"><text[^>]*data-unformatted="([^"]*)"', chart)


LOG_TICK = 'data-unformatted="10&lt;sup&gt;'
"""A tick label written 10^k by Plotly: the axis is logarithmic (exponentformat "power")."""


def test_dashboard_in_headless_chromium(campaign, tmp_path) -> None:
    from urllib.parse import quote

    client, settings, campaign_id = campaign
    table = get(client, f"/campaigns/{campaign_id}/stats/table1")
    ranking = get(client, f"/campaigns/{campaign_id}/stats/ranking")["data"]
    points = get(client, f"/campaigns/{campaign_id}/stats/pareto")["points"]
    methods = sorted({p["method"] for p in points})
    runs = get(client, f"/campaigns/{campaign_id}/runs", status="succeeded", limit=100)["data"]
    runs = [r for r in runs if not r["config_label"].startswith("reference")]
    first, second = sorted({r["scenario_id"] for r in runs})[:2]
    shown = [r["id"] for r in runs if r["scenario_id"] == first][:2]  # two runs, one reference
    page = f"/dashboard/?campaign={campaign_id}&runs={shown[0]},{shown[1]}"
    with serve(settings) as base:
        doms = {
            var: chromium(f"{base}{page}&var={quote(var)}", tmp_path / var, OFFLINE, "--dump-dom")
            for var in ("omega[gen2]", "V[bus7]")
        }
        shots = os.environ.get("RAPTORGRID_TEST_SCREENSHOT")  # a folder for PNGs of the page
        if shots:
            several = [r["id"] for r in runs if r["scenario_id"] == first]
            several += [r["id"] for r in runs if r["scenario_id"] == second][:1]
            views = {
                "dashboard_overview": f"var={quote('omega[gen2]')}",
                "dashboard_trajectories": f"var={quote('V[bus7]')}&view=trajectories&runs="
                + ",".join(map(str, several)),
            }
            Path(shots).mkdir(parents=True, exist_ok=True)
            for name, query in views.items():
                chromium(
                    f"{base}/dashboard/?campaign={campaign_id}&{query}",
                    tmp_path / f"shot-{name}",
                    OFFLINE,
                    "--hide-scrollbars",
                    "--window-size=1400,1800",
                    f"--screenshot={Path(shots) / name}.png",
                )
    dom = doms["omega[gen2]"]
    assert 'data-ready="1"' in dom, dom[-3000:]
    assert f"Campaign {campaign_id}: table-one" in dom
    assert f"{table['rows'][0]['speedup']:.2f}×" in dom  # Table I's speedup as the API says
    assert html.escape(table["subject_config"]) in dom
    assert html.escape(ranking[0]["label"]) in dom and "stable" in dom
    assert '<th class="">TSI</th>' in dom and "f max Hz" in dom  # index, both excursions
    for column in ("runtime s (median)", "p95 s", "compile s", "overhead s"):
        assert f">{column}</th>" in dom
    # Plotly drew the charts (SVG in the DOM), with ticks on log axes
    assert 'class="plot-container plotly"' in dom and 'class="main-svg"' in dom
    accuracy = _chart(dom, "plot-accuracy")
    assert accuracy.count('class="xtick"') >= 2 and LOG_TICK in accuracy
    legend = _legend(accuracy)  # a trace per method (in the order of their points' runtimes)
    assert sorted(legend[:-2]) == sorted(methods)
    assert legend[-2:] == ["Pareto front", "threshold 1.00e-4"]
    assert accuracy.count('class="trace scatter') == len(methods) + 2
    assert accuracy.count('class="point"') == len(points)  # one marker per configuration
    advances = _chart(dom, "plot-advances")
    assert advances.count('class="xtick"') >= 2 and sorted(_legend(advances)) == sorted(methods)
    # the variable list comes from the API; the URL's var and runs select what is plotted
    assert '<option value="delta[gen1]"' in dom and '<option value="omega[gen2]" selected' in dom
    ticks = {}
    for var, other in (("omega[gen2]", "V[bus7]"), ("V[bus7]", "omega[gen2]")):
        trajectory = _chart(doms[var], "plot-trajectory")
        assert f'data-shown-var="{var}"' in trajectory, trajectory[:300]
        assert f'data-shown-runs="{shown[0]},{shown[1]}"' in trajectory
        assert trajectory.count('class="trace scatter') == 3  # both runs and the reference
        labels = [x.split(":")[0] for x in _legend(trajectory)]
        assert labels == [f"run {shown[0]}", f"run {shown[1]}", "reference"]
        assert f'data-unformatted="{var} (pu)"' in trajectory and other not in trajectory
        ticks[var] = _yticks(trajectory)
        error = _chart(doms[var], "plot-error")
        assert error.count('class="trace scatter') == 2 and LOG_TICK in error  # run - reference
        assert f'data-unformatted="|{var} − reference| (pu)"' in error
    assert ticks["omega[gen2]"] != ticks["V[bus7]"]  # a different variable, other data


def test_docs_pages_use_local_assets(campaign) -> None:
    """/docs (Swagger UI) and /redoc name only the app's own URLs, which answer."""
    import re

    client, _, _ = campaign
    kinds = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
    for path, marker in (("/docs", b"SwaggerUIBundle"), ("/redoc", b"Redoc")):
        page = client.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "cdn" not in page.text.lower() and "http" not in page.text, page.text
        urls = re.findall(r'(?:src|href|spec-url)="([^"]+)"', page.text)
        urls += re.findall(r"url: '([^']+)'", page.text)
        assert "/openapi.json" in urls and any(u.endswith(".js") for u in urls), urls
        for url in urls:
            assert url.startswith("/"), url
            asset = client.get(url)
            assert asset.status_code == 200, url
            kind = kinds.get(Path(url).suffix, "application/json")
            assert asset.headers["content-type"].startswith(kind), (url, asset.headers)
            if url.endswith(".js"):
                assert marker in asset.content and len(asset.content) > 500_000, url
    assert client.get("/docs/oauth2-redirect").status_code == 200
    assert client.get("/docs/static/nope.js").status_code == 404


def test_docs_render_offline_in_headless_chromium(campaign, tmp_path) -> None:
    _, settings, _ = campaign
    with serve(settings) as base:
        docs = chromium(f"{base}/docs", tmp_path / "docs", OFFLINE, "--dump-dom")
        redoc = chromium(f"{base}/redoc", tmp_path / "redoc", OFFLINE, "--dump-dom")
    assert 'class="swagger-ui' in docs and 'class="opblock opblock-get"' in docs, docs[-2000:]
    assert "stats/pareto" in docs and "stats/pareto" in redoc
