// raptorgrid dashboard: reads the results API and draws tables and inline-SVG plots.
"use strict";
const COLORS = ["#e63946", "#1d3557", "#2a9d8f", "#f4a261", "#6a4c93", "#8d99ae", "#588157"];
const params = new URLSearchParams(location.search);
let current = params.get("campaign") ? Number(params.get("campaign")) : null;
let timer = null;

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

function scatter(el, points, xKey, yKey, xLabel, yLabel, logY) {
  const W = 460, H = 300, L = 60, B = 40, T = 10, R = 110;
  const ok = points.filter((p) => p[xKey] > 0 && p[yKey] !== null && (!logY || p[yKey] > 0));
  if (!ok.length) { el.innerHTML = "<p class='note'>no scored runs yet</p>"; return; }
  const lx = ok.map((p) => Math.log10(p[xKey]));
  const ly = ok.map((p) => (logY ? Math.log10(p[yKey]) : p[yKey]));
  const [x0, x1] = pad(Math.min(...lx), Math.max(...lx));
  const [y0, y1] = pad(Math.min(...ly), Math.max(...ly));
  const sx = (v) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const sy = (v) => H - B - ((v - y0) / (y1 - y0)) * (H - B - T);
  const methods = [...new Set(ok.map((p) => p.method))];
  let svg = `<svg width="${W}" height="${H}" xmlns="http://www.w3.org/2000/svg">`;
  svg += `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/>`;
  svg += `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`;
  svg += `<text x="${(L + W - R) / 2}" y="${H - 8}" text-anchor="middle">${xLabel}</text>`;
  svg += `<text x="12" y="${(H - B) / 2}" transform="rotate(-90 12 ${(H - B) / 2})"
    text-anchor="middle">${yLabel}</text>`;
  for (const [v, s, a] of [[x0, sx, "x"], [x1, sx, "x"], [y0, sy, "y"], [y1, sy, "y"]]) {
    const label = a === "x" || logY ? "1e" + v.toFixed(1) : fmt(v);
    svg += a === "x" ? `<text x="${s(v)}" y="${H - B + 14}" text-anchor="middle"
      font-size="10">${label}</text>` : `<text x="${L - 4}" y="${s(v)}" text-anchor="end"
      font-size="10">${label}</text>`;
  }
  ok.forEach((p, i) => {
    const c = COLORS[methods.indexOf(p.method) % COLORS.length];
    svg += `<circle cx="${sx(lx[i])}" cy="${sy(ly[i])}" r="${p.on_front ? 6 : 4}" fill="${c}"
      stroke="${p.on_front ? "#000" : "none"}"><title>${esc(p.method)} ${esc(p.config)}</title>
      </circle>`;
  });
  methods.forEach((m, i) => {
    svg += `<circle cx="${W - R + 14}" cy="${T + 10 + 16 * i}" r="5"
      fill="${COLORS[i % COLORS.length]}"/><text x="${W - R + 24}" y="${T + 14 + 16 * i}"
      font-size="11">${esc(m)}</text>`;
  });
  el.innerHTML = svg + "</svg>";
}
function pad(a, b) { return a === b ? [a - 0.5, b + 0.5] : [a - 0.05 * (b - a), b + 0.05 * (b - a)]; }

function lines(el, series) {
  const W = 940, H = 280, L = 60, B = 30, T = 10, R = 140;
  const all = series.flatMap((s) => s.t.map((t, i) => [t, s.v[i]])).filter((p) => p[1] !== null);
  if (!all.length) { el.innerHTML = "<p class='note'>no data</p>"; return; }
  const [x0, x1] = pad(Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0])));
  const [y0, y1] = pad(Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1])));
  const sx = (v) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const sy = (v) => H - B - ((v - y0) / (y1 - y0)) * (H - B - T);
  let svg = `<svg width="${W}" height="${H}" xmlns="http://www.w3.org/2000/svg">`;
  svg += `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/>`;
  svg += `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`;
  svg += `<text x="${(L + W - R) / 2}" y="${H - 4}" text-anchor="middle">t (s)</text>`;
  svg += `<text x="${L - 4}" y="${sy(y0)}" text-anchor="end" font-size="10">${fmt(y0)}</text>`;
  svg += `<text x="${L - 4}" y="${sy(y1) + 10}" text-anchor="end" font-size="10">${fmt(y1)}</text>`;
  series.forEach((s, k) => {
    const pts = s.t.map((t, i) => (s.v[i] === null ? null : `${sx(t)},${sy(s.v[i])}`))
      .filter(Boolean).join(" ");
    svg += `<polyline points="${pts}" fill="none" stroke="${COLORS[k % COLORS.length]}"
      stroke-width="1.5" ${s.dash ? 'stroke-dasharray="5,3"' : ""}/>`;
    svg += `<text x="${W - R + 8}" y="${T + 14 + 16 * k}" font-size="11"
      fill="${COLORS[k % COLORS.length]}">${esc(s.name)}</text>`;
  });
  el.innerHTML = svg + "</svg>";
}

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
  ], list.data, (c) => { current = c.id; refresh(); });
  return list.data.find((c) => c.id === current);
}

async function loadDetail(c) {
  document.getElementById("detail").hidden = false;
  document.getElementById("title").textContent = `Campaign ${c.id}: ${c.name} (${c.network})`;
  const base = `/campaigns/${c.id}`;
  const [stats, t1, pareto, ranking, failures] = await Promise.all([
    api(`${base}/stats?limit=200`), api(`${base}/stats/table1`), api(`${base}/stats/pareto`),
    api(`${base}/stats/ranking?limit=20`), api(`${base}/stats/failures?limit=50`)]);
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
    { h: "runs", f: (m) => m.runs }, { h: "success", f: (m) => fmt(100 * m.success_rate, 0) + "%" },
    { h: "median s", f: (m) => fmt(m.median_runtime_s) }, { h: "p95 s", f: (m) => fmt(m.p95_runtime_s) },
    { h: "solve s", f: (m) => fmt(m.median_solve_s) },
    { h: "accepted (min–max)", f: (m) => `${fmt(m.mean_accepted, 1)} (${m.min_accepted ?? "–"}–${
      m.max_accepted ?? "–"})` },
    { h: "rejected", f: (m) => fmt(m.mean_rejected, 1) },
    { h: "Newton", f: (m) => fmt(m.mean_newton_iterations, 1) },
    { h: "max state err", f: (m) => fmt(m.max_state_error) },
    { h: "max V MAE", f: (m) => fmt(m.max_voltage_mae) },
    { h: "qualified", f: (m) => (m.qualified ? "yes" : `<span class="bad">no</span>`) },
  ], stats.methods);
  const pts = pareto.points;
  scatter(document.getElementById("plot-accuracy"), pts, "runtime_s", "state_error",
    "median solve time (s, log)", "max state error (log)", true);
  scatter(document.getElementById("plot-advances"), pts, "runtime_s", "mean_accepted",
    "median solve time (s, log)", "mean accepted advances", false);
  table(document.getElementById("ranking"), [
    { h: "#", f: (r) => r.rank }, { h: "scenario", l: 1, f: (r) => esc(r.label) },
    { h: "severity", f: (r) => fmt(r.severity) },
    { h: "angle spread °", f: (r) => fmt(r.max_angle_spread_deg, 1) },
    { h: "V min pu", f: (r) => fmt(r.min_voltage_pu) },
    { h: "recovers s", f: (r) => fmt(r.voltage_recovery_t) },
    { h: "nadir Hz", f: (r) => fmt(r.frequency_nadir_hz) },
    { h: "verdict", l: 1, f: (r) => (r.stable ? "stable" : `<span class="bad">unstable</span>`) },
  ], ranking.data);
  table(document.getElementById("failures"), [
    { h: "run", f: (r) => r.run_id }, { h: "method", l: 1, f: (r) => esc(r.method) },
    { h: "config", l: 1, f: (r) => esc(r.config) }, { h: "scenario", l: 1, f: (r) => esc(r.scenario) },
    { h: "reason", l: 1, f: (r) => esc(r.reason) }, { h: "message", l: 1, f: (r) => esc(r.message) },
  ], failures.data);
  if (!failures.count) document.getElementById("failures").innerHTML = "<tr><td>none</td></tr>";
  const runs = await api(`${base}/runs?status=succeeded&limit=500`);
  const select = document.getElementById("run-select");
  const chosen = select.value;
  select.innerHTML = runs.data.filter((r) => !r.config_label.startsWith("reference"))
    .map((r) => `<option value="${r.id}">run ${r.id}: ${esc(r.method)} ${esc(r.config_label)} · ${
      esc(r.scenario_id)}</option>`).join("");
  if (chosen) select.value = chosen;
  if (select.value) await plotTrajectory();
}

async function plotTrajectory() {
  const run = document.getElementById("run-select").value;
  const name = document.getElementById("var-input").value;
  const el = document.getElementById("plot-trajectory");
  try {
    const tr = await api(`/runs/${run}/trajectory?vars=${encodeURIComponent(name)}&max_points=600`);
    const series = [{ name: `${tr.method} ${tr.config}`, t: tr.time, v: tr.series[name] }];
    if (tr.reference) series.push({ name: "reference", t: tr.reference.time,
      v: tr.reference.series[name], dash: true });
    lines(el, series);
  } catch (e) { el.innerHTML = `<p class="bad">${esc(e.message)}</p>`; }
}

async function refresh() {
  try {
    const c = await loadCampaigns();
    if (c) await loadDetail(c);
    document.getElementById("status").textContent = `updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.ready = "1";
    clearTimeout(timer);
    if (c && c.status === "running") timer = setTimeout(refresh, 2000);
  } catch (e) {
    document.getElementById("status").textContent = `error: ${e.message}`;
  }
}
document.getElementById("plot-button").addEventListener("click", plotTrajectory);
refresh();
