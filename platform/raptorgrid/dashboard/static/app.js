// raptorgrid dashboard: reads the results API and draws tables and Plotly charts (Plotly.js is
// the bundle of the plotly Python package, served by the API as /dashboard/vendor/plotly.min.js).
// URL query (all optional): ?campaign=ID&var=NAME&runs=ID,ID&view=trajectories (the last hides
// the tables and the runtime charts).
"use strict";
const COLORS = ["#e63946", "#1d3557", "#2a9d8f", "#f4a261", "#6a4c93", "#8d99ae", "#588157",
  "#bc6c25"];
const REF_COLORS = ["#000000", "#555555", "#999999"];
const MAX_POINTS = 5000;  // per trajectory: the whole evaluation grid of most campaigns
const DEFAULT_RUNS = 4;  // runs overlaid by default: the first scenario's, up to this many
const PLOT_CONFIG = { responsive: true, displaylogo: false };
const params = new URLSearchParams(location.search);
let current = params.get("campaign") ? Number(params.get("campaign")) : null;
const view = {  // what the trajectory charts show; the URL's var and runs seed it
  variable: params.get("var"),
  runs: (params.get("runs") || "").split(",").map(Number).filter((n) => n > 0),
  names: null,  // variable names of the campaign's runs (one network per campaign)
  namesOf: null,  // the campaign those names belong to
};
let timer = null;
if (params.get("view") === "trajectories") document.body.classList.add("trajectories-only");

async function api(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}
const fmt = (v, digits = 3) => (v === null || v === undefined ? "–"
  : Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0) ? v.toExponential(2)
  : Number(v).toFixed(digits));
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;",
  ">": "&gt;", '"': "&quot;" }[c]));
const UNITS_BY_NAME = {};  // filled from /runs/{id}/variables
const unitOf = (name) => UNITS_BY_NAME[name] || null;
const withUnit = (text, name) => (unitOf(name) ? `${text} (${unitOf(name)})` : text);

function table(el, columns, rows, onClick) {
  const head = "<tr>" + columns.map((c) => `<th class="${c.l ? "l" : ""}">${c.h}</th>`).join("")
    + "</tr>";
  const body = rows.map((r, i) => `<tr data-i="${i}" class="${onClick ? "click" : ""} ${
    r._sel ? "sel" : ""}">` + columns.map((c) => `<td class="${c.l ? "l" : ""}">${
    c.f(r)}</td>`).join("") + "</tr>").join("");
  el.innerHTML = head + body;
  if (onClick) el.querySelectorAll("tr[data-i]").forEach((tr) =>
    tr.addEventListener("click", () => onClick(rows[Number(tr.dataset.i)])));
}

// ---- charts --------------------------------------------------------------------------------
// A linear axis, or (with the values it shows) a log axis labelled 10^k: one tick per decade
// over 2-6 decades, Plotly's choice otherwise (1-2-5 steps within a decade, 10^2k over many).
function axis(title, logValues) {
  const a = { title: { text: title }, type: logValues ? "log" : "linear",
    exponentformat: "power", showexponent: "all", ticks: "outside", showline: true, mirror: true,
    linecolor: "#444", gridcolor: "#e9ecef", zeroline: false, automargin: true };
  const v = (logValues || []).flat().filter((x) => x > 0);
  const decades = v.length ? Math.log10(Math.max(...v) / Math.min(...v)) : 0;
  if (decades >= 2 && decades <= 6) a.dtick = 1;
  return a;
}
function layout(xaxis, yaxis, revision, message, height = 400) {
  return { xaxis, yaxis, height, margin: { l: 70, r: 16, t: 32, b: 40 },
    paper_bgcolor: "#fff", plot_bgcolor: "#fff", hovermode: "closest", uirevision: revision,
    font: { family: "system-ui, sans-serif", size: 12 }, showlegend: true,
    legend: { orientation: "h", x: 0, y: -0.16, yanchor: "top" },
    annotations: message ? [{ text: message, showarrow: false, xref: "paper", yref: "paper",
      x: 0.5, y: 0.5, font: { size: 14, color: "#555" } }] : [] };
}
const draw = (id, traces, lay) => Plotly.react(document.getElementById(id), traces, lay,
  PLOT_CONFIG);

function pointText(p) {
  return `<b>${esc(p.method)}</b> ${esc(p.config)}<br>runtime ${fmt(p.runtime_s)} s`
    + `<br>state error ${fmt(p.state_error)}<br>mean accepted advances ${fmt(p.mean_accepted, 1)}`
    + (p.qualified ? "" : "<br>not accuracy-qualified")
    + (p.on_front ? "<br>on the Pareto front" : "");
}

function methodTraces(points, yKey) {
  const methods = [...new Set(points.map((p) => p.method))];
  return methods.map((m, i) => {
    const pts = points.filter((p) => p.method === m && p[yKey] > 0);
    const color = COLORS[i % COLORS.length];
    return { type: "scatter", mode: "markers", name: m, x: pts.map((p) => p.runtime_s),
      y: pts.map((p) => p[yKey]), text: pts.map(pointText), hovertemplate: "%{text}<extra></extra>",
      marker: { color, size: 11, line: { color, width: 2 },
        symbol: pts.map((p) => (p.qualified ? "circle" : "circle-open")) } };
  });
}

async function drawPareto(pareto, thresholds, revision) {
  const pts = pareto.points.filter((p) => p.runtime_s > 0 && p.state_error > 0);
  const runtimes = pts.map((p) => p.runtime_s);
  const xTitle = "median solve time per run (s)";
  const front = pts.filter((p) => p.on_front).sort((a, b) => a.runtime_s - b.runtime_s);
  const accuracy = methodTraces(pts, "state_error");
  if (front.length) accuracy.push({ type: "scatter", mode: "lines", name: "Pareto front",
    x: front.map((p) => p.runtime_s), y: front.map((p) => p.state_error), hoverinfo: "skip",
    line: { color: "#000", width: 1.5, dash: "dot" } });
  const limit = thresholds?.state_error;
  if (pts.length && limit > 0) {
    accuracy.push({ type: "scatter", mode: "lines", name: `threshold ${fmt(limit)}`,
      x: [Math.min(...runtimes), Math.max(...runtimes)], y: [limit, limit], hoverinfo: "skip",
      line: { color: "#c92a2a", width: 1, dash: "dash" } });
  }
  const empty = pts.length ? null : "no scored runs yet";
  await draw("plot-accuracy", accuracy, layout(axis(xTitle, runtimes),
    axis("worst normalized state error (–)", [...pts.map((p) => p.state_error), limit]),
    revision, empty));
  await draw("plot-advances", methodTraces(pts, "mean_accepted"), layout(axis(xTitle, runtimes),
    axis("mean accepted advances per run", pts.map((p) => p.mean_accepted)), revision, empty));
}

// The reference's values at the run's times (linear; null outside its span or next to a gap).
function interpolate(t, rt, rv) {
  if (t.length === rt.length && t.every((x, i) => x === rt[i])) return rv;
  if (rt.length < 2) return t.map((x) => (x === rt[0] ? rv[0] : null));
  let j = 0;
  return t.map((x) => {
    if (x === null || x < rt[0] || x > rt[rt.length - 1]) return null;
    while (j < rt.length - 2 && rt[j + 1] < x) j++;
    const [t0, t1, v0, v1] = [rt[j], rt[j + 1], rv[j], rv[j + 1]];
    if (v0 === null || v1 === null) return null;
    return t1 === t0 ? v0 : v0 + ((v1 - v0) * (x - t0)) / (t1 - t0);
  });
}

// Variable names of a run, with the unit an axis shows (GET /runs/{id}/variables).
async function variableNames(runId) {
  const body = await api(`/runs/${runId}/variables`);
  body.variables.forEach((v) => { UNITS_BY_NAME[v.name] = v.unit; });
  return body.variables.map((v) => v.name);
}

function selectedRuns() {
  return [...document.getElementById("run-select").selectedOptions].map((o) => Number(o.value));
}

async function drawTrajectories() {
  const name = document.getElementById("var-select").value;
  const ids = selectedRuns();
  const revision = `${current}:${name}`;
  const traj = document.getElementById("plot-trajectory");
  const error = document.getElementById("plot-error");
  const note = document.getElementById("error-note");
  const bodies = await Promise.all(ids.map((id) => api(
    `/runs/${id}/trajectory?vars=${encodeURIComponent(name)}&max_points=${MAX_POINTS}`)));
  const lines = [], errors = [], refs = new Map();
  let thinned = false;
  bodies.forEach((b, k) => {
    const color = COLORS[k % COLORS.length];
    const label = `run ${b.run_id}: ${b.method} ${b.config}`;
    const v = b.series[name];
    lines.push({ type: "scatter", mode: "lines", name: label, x: b.time, y: v,
      line: { color, width: 1.5 }, hovertemplate: `${esc(label)}<br>t %{x:.4f} s<br>%{y:.6g}`
        + "<extra></extra>" });
    if (!b.reference) return;
    thinned = thinned || b.downsampled || b.reference.downsampled;
    if (!refs.has(b.reference.run_id)) refs.set(b.reference.run_id, { ...b.reference,
      scenario: b.scenario });
    const r = interpolate(b.time, b.reference.time, b.reference.series[name]);
    const diff = v.map((y, i) => (y === null || r[i] === null || y === r[i] ? null
      : Math.abs(y - r[i])));
    errors.push({ type: "scatter", mode: "lines", name: label, x: b.time, y: diff,
      line: { color, width: 1.5 },
      hovertemplate: `${esc(label)}<br>t %{x:.4f} s<br>|error| %{y:.3e}<extra></extra>` });
  });
  [...refs.values()].forEach((r, k) => {
    const label = refs.size > 1 ? `reference run ${r.run_id} (${r.scenario})` : "reference";
    lines.push({ type: "scatter", mode: "lines", name: label, x: r.time, y: r.series[name],
      line: { color: REF_COLORS[k % REF_COLORS.length], width: 2, dash: "dash" },
      hovertemplate: `${esc(label)}<br>t %{x:.4f} s<br>%{y:.6g}<extra></extra>` });
  });
  const scenarios = [...new Set(bodies.map((b) => b.scenario))];
  note.textContent = (scenarios.length ? `scenario${scenarios.length > 1 ? "s" : ""}: ${
    scenarios.join("; ")}. ` : "") + (thinned ? `Downsampled to ≤ ${MAX_POINTS} points: the`
    + " reference is interpolated linearly onto each run's times." : "");
  const empty = ids.length ? null : "no run selected";
  await draw("plot-trajectory", lines, layout(axis("t (s)"), axis(withUnit(name, name)),
    revision, empty, 480));
  await draw("plot-error", errors, layout(axis("t (s)"),
    axis(withUnit(`|${name} − reference|`, name), errors.map((e) => e.y)), revision,
    empty || (errors.length ? null : "no reference trajectory"), 480));
  traj.dataset.shownVar = error.dataset.shownVar = name;
  traj.dataset.shownRuns = error.dataset.shownRuns = ids.join(",");
}

async function loadTrajectories(runs, scenarioLabels) {
  const select = document.getElementById("run-select");
  const ids = new Set(runs.map((r) => r.id));
  let chosen = view.runs.filter((id) => ids.has(id));
  if (!chosen.length && runs.length) {
    const first = runs[0].scenario_id;
    chosen = runs.filter((r) => r.scenario_id === first).slice(0, DEFAULT_RUNS).map((r) => r.id);
  }
  view.runs = chosen;
  select.innerHTML = runs.map((r) => `<option value="${r.id}" ${chosen.includes(r.id)
    ? "selected" : ""}>run ${r.id}: ${esc(r.method)} ${esc(r.config_label)} · ${
    esc(scenarioLabels[r.scenario_id] ?? `scenario ${r.scenario_id}`)}</option>`).join("");
  if (!runs.length) {
    document.getElementById("var-select").innerHTML = "";
    return drawTrajectories();
  }
  if (view.namesOf !== current) {
    view.names = await variableNames(runs[0].id);
    view.namesOf = current;
  }
  const names = view.names;
  if (!names.includes(view.variable)) {
    view.variable = names.find((n) => n.startsWith("omega[")) ?? names[0];
  }
  document.getElementById("var-select").innerHTML = names.map((n) => `<option value="${esc(n)}"${
    n === view.variable ? " selected" : ""}>${esc(withUnit(n, n))}</option>`).join("");
  await drawTrajectories();
}

function remember() {  // the shown selection into the URL (reload and share keep it)
  const query = new URLSearchParams(location.search);
  query.set("campaign", current);
  query.set("var", view.variable);
  query.set("runs", view.runs.join(","));
  history.replaceState(null, "", `?${query}${location.hash}`);
}

async function changed() {
  view.variable = document.getElementById("var-select").value;
  view.runs = selectedRuns();
  remember();
  try {
    await drawTrajectories();
  } catch (e) {
    document.getElementById("status").textContent = `error: ${e.message}`;
  }
}

// ---- page ----------------------------------------------------------------------------------
async function loadCampaigns() {
  const list = await api("/campaigns?limit=50");
  if (current === null && list.data.length) current = list.data[0].id;
  list.data.forEach((c) => { c._sel = c.id === current; });
  table(document.getElementById("campaigns"), [
    { h: "id", f: (c) => c.id }, { h: "name", l: 1, f: (c) => esc(c.name) },
    { h: "network", l: 1, f: (c) => esc(c.network) }, { h: "status", l: 1, f: (c) => c.status },
    { h: "progress", l: 1, f: (c) => `<span class="bar"><span style="width:${
      Math.round(100 * c.progress)}%"></span></span> ${c.done}/${c.n_runs}` },
    { h: "succeeded", f: (c) => c.succeeded }, { h: "failed", f: (c) => c.failed },
    { h: "running", f: (c) => c.running },
  ], list.data, (c) => {
    if (c.id !== current) view.runs = [];
    current = c.id;
    remember();
    refresh();
  });
  return list.data.find((c) => c.id === current);
}

// A CCT campaign: one bar per fault and method, critical clearing time in ms, shortest first.
async function drawCct(c) {
  const section = document.getElementById("cct-section");
  if (!c.cct) { section.hidden = true; return; }
  section.hidden = false;
  const body = await api(`/campaigns/${c.id}/cct`);
  const done = body.data.filter((r) => r.cct_s !== null);
  const order = [...new Set(done.map((r) => r.scenario))];  // table order: shortest CCT first
  const methods = [...new Set(done.map((r) => `${r.method} ${r.config}`))];
  const traces = methods.map((m, k) => {
    const mine = done.filter((r) => `${r.method} ${r.config}` === m);
    return { type: "bar", name: m, x: mine.map((r) => r.scenario), y: mine.map((r) => 1e3 * r.cct_s),
      marker: { color: COLORS[k % COLORS.length] },
      text: mine.map((r) => `${r.probes} probes, ${fmt(r.solve_seconds)} s`),
      hovertemplate: "%{x}<br>CCT %{y:.1f} ms<br>%{text}<extra>%{fullData.name}</extra>" };
  });
  document.getElementById("cct-note").textContent = `${done.length} of ${body.data.length} `
    + `searches done; resolution ${fmt(1e3 * body.resolution_s, 1)} ms, longest fault searched `
    + `${fmt(1e3 * body.max_clearing_s, 0)} ms; stable: ${body.criterion}`;
  const lay = layout({ ...axis("fault"), categoryorder: "array", categoryarray: order },
    axis("critical clearing time (ms)"), `cct:${c.id}`, done.length ? "" : "no search done yet");
  lay.barmode = "group";
  await draw("plot-cct", traces, lay);
}

async function loadDetail(c) {
  document.getElementById("detail").hidden = false;
  document.getElementById("title").textContent = `Campaign ${c.id}: ${c.name} (${c.network})`;
  const base = `/campaigns/${c.id}`;
  const [stats, t1, pareto, ranking, failures, runs] = await Promise.all([
    api(`${base}/stats?limit=200`), api(`${base}/stats/table1`), api(`${base}/stats/pareto`),
    api(`${base}/stats/ranking?limit=50`), api(`${base}/stats/failures?limit=50`),
    api(`${base}/runs?status=succeeded&limit=500`)]);
  document.getElementById("t1-subject").textContent = t1.subject_config === null
    ? `${t1.subject}: no accuracy-qualified configuration`
    : `${t1.subject} ${t1.subject_config}: ${fmt(t1.subject_runtime_s)} s, state error ${
      fmt(t1.subject_state_error)}, V MAE ${fmt(t1.subject_voltage_mae)}`;
  table(document.getElementById("table1"), [
    { h: "baseline", l: 1, f: (r) => esc(r.method) },
    { h: "fastest qualified config", l: 1, f: (r) => esc(r.config ?? r.note) },
    { h: "runtime s", f: (r) => fmt(r.runtime_s) }, { h: "state error", f: (r) => fmt(r.state_error) },
    { h: "speedup", f: (r) => (r.speedup === null ? "–" : `<b class="speedup">${
      r.speedup.toFixed(2)}×</b>`) },
  ], t1.rows);
  table(document.getElementById("methods"), [
    { h: "method", l: 1, f: (m) => esc(m.method) }, { h: "config", l: 1, f: (m) => esc(m.config) },
    { h: "runs", f: (m) => m.runs ?? "–" },
    { h: "success", f: (m) => (m.success_rate == null ? "–" : fmt(100 * m.success_rate, 0) + "%") },
    { h: "runtime s (median)", f: (m) => fmt(m.median_runtime_s) },
    { h: "p95 s", f: (m) => fmt(m.p95_runtime_s) },
    { h: "compile s", f: (m) => fmt(m.mean_compile_s) },
    { h: "overhead s", f: (m) => fmt(m.mean_overhead_s) },
    { h: "accepted (min–max)", f: (m) => `${fmt(m.mean_accepted, 1)} (${m.min_accepted ?? "–"}–${
      m.max_accepted ?? "–"})` },
    { h: "rejected", f: (m) => fmt(m.mean_rejected, 1) },
    { h: "Newton", f: (m) => fmt(m.mean_newton_iterations, 1) },
    { h: "max state err", f: (m) => fmt(m.max_state_error) },
    { h: "max V MAE", f: (m) => fmt(m.max_voltage_mae) },
    { h: "qualified", f: (m) => (m.qualified ? "yes" : `<span class="bad">no</span>`) },
  ], stats.methods);
  table(document.getElementById("ranking"), [
    { h: "#", f: (r) => r.rank }, { h: "scenario", l: 1, f: (r) => esc(r.label) },
    { h: "severity", f: (r) => fmt(r.severity) },
    { h: "TSI", f: (r) => fmt(r.tsi, 1) },
    { h: "angle spread °", f: (r) => fmt(r.max_angle_spread_deg, 1) },
    { h: "V min pu", f: (r) => fmt(r.min_voltage_pu) },
    { h: "recovers s", f: (r) => fmt(r.voltage_recovery_t) },
    { h: "f min Hz", f: (r) => fmt(r.frequency_nadir_hz) },
    { h: "f max Hz", f: (r) => fmt(r.frequency_zenith_hz) },
    { h: "verdict", l: 1, f: (r) => (r.stable ? "stable" : `<span class="bad">unstable</span>`) },
  ], ranking.data.slice(0, 20));
  table(document.getElementById("failures"), [
    { h: "run", f: (r) => r.run_id }, { h: "method", l: 1, f: (r) => esc(r.method) },
    { h: "config", l: 1, f: (r) => esc(r.config) }, { h: "scenario", l: 1, f: (r) => esc(r.scenario) },
    { h: "reason", l: 1, f: (r) => esc(r.reason) }, { h: "message", l: 1, f: (r) => esc(r.message) },
  ], failures.data);
  if (!failures.count) document.getElementById("failures").innerHTML = "<tr><td>none</td></tr>";
  await drawCct(c);
  await drawPareto(pareto, stats.thresholds, String(c.id));
  const labels = Object.fromEntries(ranking.data.map((r) => [r.scenario_id, r.label]));
  await loadTrajectories(runs.data.filter((r) => !r.config_label.startsWith("reference")), labels);
}

async function refresh() {
  try {
    const c = await loadCampaigns();
    if (c) await loadDetail(c);
    document.getElementById("status").textContent = `updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.ready = "1";  // after every chart above was drawn
    clearTimeout(timer);
    if (c && c.status === "running") timer = setTimeout(refresh, 2000);
  } catch (e) {
    document.getElementById("status").textContent = `error: ${e.message}`;
  }
}
document.getElementById("var-select").addEventListener("change", changed);
document.getElementById("run-select").addEventListener("change", changed);
refresh();
