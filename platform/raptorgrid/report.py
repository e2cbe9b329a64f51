"""A campaign report: the tables a planner or a method researcher reads (columns shared with the
CLI: ``raptorgrid.columns``), accuracy and work against runtime, the worst contingencies'
trajectories (method over reference) as PNG, and one self-contained HTML file (images inlined),
all from the same SQL aggregates as the API."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from raptorgrid import repository as repo  # noqa: E402
from raptorgrid.columns import (  # noqa: E402
    CONFIGS,
    FAILURES,
    RANKING,
    TABLE_ONE,
    Column,
    format_value,
)
from raptorgrid.repository import stats as stats_repo  # noqa: E402
from raptorgrid.scoring.indicators import SEVERITY_DEFINITION  # noqa: E402
from raptorgrid.tables import Campaign  # noqa: E402
from raptorgrid.zarr_store import ZarrRoot, open_run  # noqa: E402


@dataclass(frozen=True)
class ScenarioTrajectories:
    """A ranked contingency's runs read back from Zarr: the subject method's and the
    reference's (either may be missing)."""

    rank: int
    label: str
    method: dict[str, Any] | None
    """{"method", "config", "run_id", "dataset"} of the plotted method run."""
    reference: dict[str, Any] | None


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
    trajectories: list[ScenarioTrajectories]


@dataclass(frozen=True)
class ReportFiles:
    accuracy_png: Path
    accepted_png: Path
    trajectory_pngs: list[Path]
    html: Path

    def all(self) -> list[Path]:
        return [self.accuracy_png, self.accepted_png, *self.trajectory_pngs, self.html]


def collect(
    *,
    session: Session,
    campaign_id: int,
    zarr_root: ZarrRoot | None = None,
    ranking_limit: int = 20,
    worst: int = 3,
) -> ReportData:
    """The report's tables from SQL, and (with ``zarr_root``) the trajectories of the
    ``worst`` ranked contingencies: Table I's subject at its fastest qualified configuration
    (else its first succeeded run) against the scenario's reference."""
    configs, _ = stats_repo.config_stats(session=session, campaign_id=campaign_id)
    ranking, _ = stats_repo.contingency_ranking(
        session=session, campaign_id=campaign_id, limit=ranking_limit
    )
    failures, _ = stats_repo.failures(session=session, campaign_id=campaign_id, limit=50)
    campaign = session.get(Campaign, campaign_id)
    table_one = stats_repo.table_one(configs)
    trajectories = []
    if zarr_root is not None and ranking:
        chosen = ranking[:worst]
        runs = repo.succeeded_runs(session=session, scenario_ids=[r["scenario_id"] for r in chosen])
        subject = table_one["subject"]
        preferred = table_one["subject_config"]
        for row in chosen:
            mine = [r for r in runs if r.scenario_id == row["scenario_id"]]
            reference = next((r for r in mine if r.is_reference), None)
            candidates = [r for r in mine if not r.is_reference]
            method = (
                next((r for r in candidates if (r.method, r.config_label) == (subject, preferred)),
                     None)
                or next((r for r in candidates if r.method == subject), None)
                or next(iter(candidates), None)
            )  # fmt: skip
            trajectories.append(
                ScenarioTrajectories(
                    rank=row["rank"],
                    label=row["label"],
                    method=_opened(zarr_root, campaign_id, method),
                    reference=_opened(zarr_root, campaign_id, reference),
                )
            )
    return ReportData(
        campaign_id=campaign_id,
        name=campaign.name if campaign is not None else "",
        network=campaign.network if campaign is not None else "",
        configs=[c.as_dict() for c in configs],
        table_one=table_one,
        pareto=stats_repo.pareto_front(configs),
        ranking=ranking,
        failures=failures,
        trajectories=trajectories,
    )


def _opened(zarr_root: ZarrRoot, campaign_id: int, run: Any) -> dict[str, Any] | None:
    if run is None:
        return None
    try:
        dataset = open_run(zarr_root, campaign_id, run.id)
    except (FileNotFoundError, KeyError):  # not published (e.g. removed by hand): skip it
        return None
    return {"method": run.method, "config": run.config_label, "run_id": run.id, "dataset": dataset}


def _scatter(points: list[dict[str, Any]], y_key: str, y_label: str, path: Path) -> Path:
    """Runtime against ``y_key`` per configuration, one colour per method, front outlined;
    configurations without a score (no reference) are drawn too, from the stats table."""
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
    if not any(p.get(y_key) is not None for p in points):
        ax.text(0.5, 0.5, "no scored configuration\n(the campaign has no reference)",
                ha="center", va="center", transform=ax.transAxes)  # fmt: skip
    else:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    ax.set_xlabel("median solve time per run (s)")
    ax.set_ylabel(y_label)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_plots(data: ReportData, out_dir: Path) -> tuple[Path, Path]:
    """Accuracy and accepted advances against runtime. Accuracy needs scores (a reference);
    accepted advances are drawn for every configuration with runs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cid = data.campaign_id
    accuracy = _scatter(
        data.pareto,
        "state_error",
        "max normalized state error",
        out_dir / f"campaign_{cid}_accuracy_runtime.png",
    )
    work = [
        {"method": c["method"], "runtime_s": c["median_runtime_s"],
         "mean_accepted": c["mean_accepted"], "on_front": False}
        for c in data.configs
        if not c["is_reference"] and c["median_runtime_s"] and c["mean_accepted"]
    ]  # fmt: skip
    accepted = _scatter(
        work, "mean_accepted", "mean accepted advances",
        out_dir / f"campaign_{cid}_accepted_runtime.png",
    )  # fmt: skip
    return accuracy, accepted


def _series(dataset: Any, prefix: str) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """(time, values (time, k), names) of the outputs (else states) named ``prefix[...]``."""
    for var, dim in (("y", "output"), ("x", "state")):
        names = [str(n) for n in dataset[dim].values]
        cols = [i for i, n in enumerate(names) if n.startswith(prefix)]
        if cols:
            values = np.asarray(dataset[var].isel({dim: cols}).values, dtype=float)
            return np.asarray(dataset["time"].values, float), values, [names[i] for i in cols]
    return None


def write_trajectory_plot(item: ScenarioTrajectories, path: Path) -> Path:
    """Rotor-angle spread (deg), rotor speeds (pu) and the three lowest bus voltages (pu)
    against time: the method's run solid, the reference dashed."""
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.8), dpi=100)
    runs = [(r, style) for r, style in ((item.method, "-"), (item.reference, "--")) if r]
    lowest: list[str] = []
    if item.reference or item.method:
        volts = _series((item.reference or item.method)["dataset"], "V[")
        if volts is not None:
            order = np.argsort(volts[1].min(axis=0))[:3]
            lowest = [volts[2][k] for k in order]
    for run, style in runs:
        ds = run["dataset"]
        who = "reference" if run is item.reference else f"{run['method']} {run['config']}"
        delta = _series(ds, "delta[")
        if delta is not None:
            t, d, _ = delta
            axes[0].plot(t, np.degrees(d.max(axis=1) - d.min(axis=1)), style, label=who)
        omega = _series(ds, "omega[")
        if omega is not None:
            t, w, names = omega
            for k, name in enumerate(names):
                axes[1].plot(t, w[:, k], style, lw=1, color=f"C{k % 10}",
                             label=f"{name} ({who})" if k < 4 else None)  # fmt: skip
        volts = _series(ds, "V[")
        if volts is not None:
            t, v, names = volts
            for k, name in enumerate(names):
                if name in lowest:
                    axes[2].plot(t, v[:, k], style, lw=1, color=f"C{lowest.index(name)}",
                                 label=f"{name} ({who})")  # fmt: skip
    titles = ("rotor-angle spread", "rotor speeds", "lowest bus voltages")
    units = ("max - min rotor angle (deg)", "speed (pu)", "voltage magnitude (pu)")
    for ax, title, unit in zip(axes, titles, units, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=6)
        else:
            ax.text(0.5, 0.5, "not in this network's outputs", ha="center", va="center",
                    transform=ax.transAxes)  # fmt: skip
    fig.suptitle(f"#{item.rank} {item.label}: method solid, reference dashed", fontsize=11)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _html_table(rows: list[dict[str, Any]], columns: list[Column]) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(
        f'<th title="{html.escape(c.meaning)}">{html.escape(c.title)}</th>' for c in columns
    )
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c.cell(r))}</td>" for c in columns) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _inline(paths: list[Path]) -> str:
    return "".join(
        f'<img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}">'
        for p in paths
    )


def write_html(
    data: ReportData, images: tuple[Path, Path], trajectories: list[Path], path: Path
) -> Path:
    t1 = data.table_one
    subject = (
        f"{html.escape(str(t1['subject']))} {html.escape(format_value(t1['subject_config']))}: "
        f"{format_value(t1['subject_runtime_s'])} s, state error "
        f"{format_value(t1['subject_state_error'], '.2g')}"
    )
    title = html.escape(f"{data.name} — {data.network} (campaign {data.campaign_id})")
    worst = (
        f"<h2>Worst contingencies: trajectories</h2>{_inline(trajectories)}" if trajectories else ""
    )
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
        "img{max-width:48%;margin-right:1%}img[alt*=trajectory]{max-width:98%}</style>"
        "</head><body>"
        f"<h1>{title}</h1>"
        f"<h2>Table I (accuracy-qualified speedups)</h2><p>{subject}</p>"
        f"{_html_table(t1['rows'], TABLE_ONE)}<p>{html.escape(t1['basis'])}</p>"
        f"<h2>Accuracy and work against runtime</h2>{_inline(list(images))}"
        f"<h2>Per method and configuration</h2>{_html_table(data.configs, CONFIGS)}"
        f"<h2>Contingency ranking</h2>{_html_table(data.ranking, RANKING)}"
        f"<p>{html.escape(SEVERITY_DEFINITION)}</p>{worst}"
        f"<h2>Failures</h2>{_html_table(data.failures, FAILURES)}"
        "</body></html>",
        encoding="utf-8",
    )
    return path


def write_report(
    *, session: Session, campaign_id: int, out_dir: Path, zarr_root: ZarrRoot | None = None
) -> tuple[ReportData, ReportFiles]:
    """Collect the campaign's tables (and, with ``zarr_root``, the worst contingencies'
    trajectories) and write the plots and the HTML report to ``out_dir``."""
    out_dir = Path(out_dir)
    data = collect(session=session, campaign_id=campaign_id, zarr_root=zarr_root)
    accuracy, accepted = write_plots(data, out_dir)
    trajectories = [
        write_trajectory_plot(item, out_dir / f"campaign_{campaign_id}_trajectory_{item.rank}.png")
        for item in data.trajectories
        if item.method or item.reference
    ]
    page = write_html(
        data, (accuracy, accepted), trajectories, out_dir / f"campaign_{campaign_id}.html"
    )
    return data, ReportFiles(accuracy, accepted, trajectories, page)
