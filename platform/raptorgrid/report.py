"""A campaign report: the tables a planner or a method researcher reads, two plots as PNG, and
one self-contained HTML file (images inlined), all from the same SQL aggregates as the API."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from raptorgrid.repository import stats as stats_repo  # noqa: E402
from raptorgrid.tables import Campaign  # noqa: E402


@dataclass(frozen=True)
class ReportData:
    campaign_id: int
    name: str
    network: str
    configs: list[dict[str, Any]]
    table_one: dict[str, Any]
    pareto: list[dict[str, Any]]
    ranking: list[dict[str, Any]]
    failures: list[dict[str, Any]]


@dataclass(frozen=True)
class ReportFiles:
    accuracy_png: Path
    accepted_png: Path
    html: Path


def collect(*, session: Session, campaign_id: int, ranking_limit: int = 20) -> ReportData:
    configs, _ = stats_repo.config_stats(session=session, campaign_id=campaign_id)
    ranking, _ = stats_repo.contingency_ranking(
        session=session, campaign_id=campaign_id, limit=ranking_limit
    )
    failures, _ = stats_repo.failures(session=session, campaign_id=campaign_id, limit=50)
    campaign = session.get(Campaign, campaign_id)
    return ReportData(
        campaign_id=campaign_id,
        name=campaign.name if campaign is not None else "",
        network=campaign.network if campaign is not None else "",
        configs=[c.as_dict() for c in configs],
        table_one=stats_repo.table_one(configs),
        pareto=stats_repo.pareto_front(configs),
        ranking=ranking,
        failures=failures,
    )


def _scatter(points: list[dict[str, Any]], y_key: str, y_label: str, path: Path) -> Path:
    """Runtime against ``y_key`` per configuration, one colour per method, front outlined."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for method in dict.fromkeys(p["method"] for p in points):
        mine = [p for p in points if p["method"] == method and p.get(y_key) is not None]
        ax.scatter(
            [p["runtime_s"] for p in mine],
            [p[y_key] for p in mine],
            label=method,
            s=36,
            edgecolors=["black" if p.get("on_front") else "none" for p in mine],
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("median solve time per run (s)")
    ax.set_ylabel(y_label)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_plots(data: ReportData, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    cid = data.campaign_id
    accuracy = _scatter(
        data.pareto,
        "state_error",
        "max normalized state error",
        out_dir / f"campaign_{cid}_accuracy_runtime.png",
    )
    accepted = _scatter(
        data.pareto,
        "mean_accepted",
        "mean accepted advances",
        out_dir / f"campaign_{cid}_accepted_runtime.png",
    )
    return accuracy, accepted


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _html_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


CONFIG_COLUMNS = [
    "method",
    "config",
    "runs",
    "succeeded",
    "failed",
    "median_solve_s",
    "p95_runtime_s",
    "mean_accepted",
    "mean_rejected",
    "mean_newton_iterations",
    "max_state_error",
    "max_voltage_mae",
    "qualified",
]
TABLE_ONE_COLUMNS = ["method", "config", "runtime_s", "state_error", "voltage_mae", "speedup"]
RANKING_COLUMNS = [
    "rank",
    "label",
    "severity",
    "stable",
    "max_angle_spread_deg",
    "frequency_nadir_hz",
    "frequency_zenith_hz",
    "min_voltage_pu",
    "voltage_recovery_t",
    "failed_runs",
]
FAILURE_COLUMNS = ["run_id", "method", "config", "scenario", "reason", "message"]


def write_html(data: ReportData, images: tuple[Path, Path], path: Path) -> Path:
    t1 = data.table_one
    inline = "".join(
        f'<img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}">'
        for p in images
    )
    subject = (
        f"{html.escape(str(t1['subject']))} {html.escape(_fmt(t1['subject_config']))}: "
        f"{_fmt(t1['subject_runtime_s'])} s, state error {_fmt(t1['subject_state_error'])}"
    )
    title = html.escape(f"{data.name} — {data.network} (campaign {data.campaign_id})")
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
        "img{max-width:48%;margin-right:1%}</style></head><body>"
        f"<h1>{title}</h1>"
        f"<h2>Table I (accuracy-qualified speedups)</h2><p>{subject}</p>"
        f"{_html_table(t1['rows'], TABLE_ONE_COLUMNS)}<p>{html.escape(t1['basis'])}</p>"
        f"<h2>Accuracy and work against runtime</h2>{inline}"
        f"<h2>Per method and configuration</h2>{_html_table(data.configs, CONFIG_COLUMNS)}"
        f"<h2>Contingency ranking</h2>{_html_table(data.ranking, RANKING_COLUMNS)}"
        f"<h2>Failures</h2>{_html_table(data.failures, FAILURE_COLUMNS)}"
        "</body></html>",
        encoding="utf-8",
    )
    return path


def write_report(
    *, session: Session, campaign_id: int, out_dir: Path
) -> tuple[ReportData, ReportFiles]:
    """Collect the campaign's tables and write both plots and the HTML report to ``out_dir``."""
    data = collect(session=session, campaign_id=campaign_id)
    accuracy, accepted = write_plots(data, Path(out_dir))
    page = write_html(data, (accuracy, accepted), Path(out_dir) / f"campaign_{campaign_id}.html")
    return data, ReportFiles(accuracy, accepted, page)
