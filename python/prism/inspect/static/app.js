// Prism inspector page. Plain JavaScript, no dependencies, no network but
// this server (or, in an exported report, none at all: the data is embedded).
"use strict";

const EMBED = document.getElementById("prism-data");
const DATA = EMBED ? JSON.parse(EMBED.textContent) : null;
const TOKEN = new URLSearchParams(location.search).get("token") || "";
const PAGE = 50;
const STEP_PAGE = 100;
const state = { session: null, leaf: null, msgOffset: 0, msgTotal: 0, lastEntryId: null,
  stepOffset: 0, tail: null, stale: {}, rendered: new Set(), highlight: null };

function $(id) { return document.getElementById(id); }
function esc(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function el(tag, attrs, html) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  if (html !== undefined) node.innerHTML = html;
  return node;
}
function fmt(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
function when(iso) { return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "–"; }

function pageOf(list, offset, limit) {
  const total = list.length;
  const start = offset === null || offset === undefined ? Math.max(0, total - limit) : Math.max(0, Math.min(offset, total));
  return { total, offset: start, items: list.slice(start, start + limit) };
}

async function api(path, params) {
  if (DATA) return embedded(path, params || {});
  const query = new URLSearchParams({ token: TOKEN, ...(params || {}) });
  const response = await fetch(`${path.slice(1)}?${query}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

function embedded(path, params) {
  const off = params.offset === undefined ? null : Number(params.offset);
  if (path === "/api/messages") {
    let offset = off;
    if (params.around) {
      const at = DATA.messages.findIndex((e) => e.id === params.around);
      if (at >= 0) offset = Math.max(0, at - Math.floor(PAGE / 2));
    }
    const page = pageOf(DATA.messages, offset, Number(params.limit || PAGE));
    return { total: page.total, offset: page.offset, entries: page.items };
  }
  if (path === "/api/timeline") {
    const page = pageOf(DATA.timeline.steps, off, Number(params.limit || STEP_PAGE));
    return { total: page.total, offset: page.offset, steps: page.items, counts: DATA.timeline.counts };
  }
  return DATA[path.slice(5)];
}

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = false;
}

// --- markdown (escaped first: nothing in a message becomes markup) -------
function markdown(source) {
  const parts = String(source).split(/```/);
  return parts.map((part, i) => {
    if (i % 2 === 1) {
      const body = part.replace(/^[^\n]*\n/, "");
      return `<pre class="code">${esc(body)}</pre>`;
    }
    return inline(part);
  }).join("");
}
function inline(text) {
  const lines = esc(text).split("\n");
  const out = [];
  let list = false;
  for (const line of lines) {
    const item = line.match(/^\s*[-*] (.*)$/);
    if (item && !list) { out.push("<ul>"); list = true; }
    if (!item && list) { out.push("</ul>"); list = false; }
    let html = item ? item[1] : line;
    const heading = html.match(/^(#{1,4}) (.*)$/);
    html = (heading ? heading[2] : html)
      .replace(/`([^`]+)`/g, "<code>$1</code>")
      .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/\*([^*]+)\*/g, "<em>$1</em>")
      .replace(/\[([^\]]+)\]\((https?:[^)\s]+)\)/g, '<a href="$2" rel="noreferrer noopener" target="_blank">$1</a>');
    if (heading) out.push(`<h${heading[1].length + 2}>${html}</h${heading[1].length + 2}>`);
    else if (item) out.push(`<li>${html}</li>`);
    else if (html !== "") out.push(`<p>${html}</p>`);
  }
  if (list) out.push("</ul>");
  return out.join("");
}

function json(value) { return esc(JSON.stringify(value, null, 2)); }
function preview(value, limit) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > limit ? text.slice(0, limit - 1) + "…" : text;
}

function renderBlock(block) {
  switch (block.type) {
    case "text": return `<div class="md">${markdown(block.text || "")}</div>`;
    case "thinking": return `<details class="thinking"><summary>thinking (${fmt((block.text || "").length)} chars)</summary><pre>${esc(block.text || "")}</pre></details>`;
    case "tool_call": return `<details class="tool-call"><summary>→ <b>${esc(block.name)}</b>(${esc(preview(block.arguments || {}, 80))})</summary><pre>${json(block.arguments)}</pre></details>`;
    case "tool_result": return `<details class="tool-result${block.isError ? " is-error" : ""}"><summary>← <b>${esc(block.name || "")}</b> ${block.isError ? "error: " : ""}${esc(preview(block.result, 80))}</summary><pre>${json(block.result)}</pre></details>`;
    case "image":
      if (block.data) return `<img class="image" alt="image" src="data:${esc(block.mimeType || "image/png")};base64,${esc(block.data)}">`;
      return `<div class="image-ref">image: ${esc(block.url || "")} (not loaded: the inspector fetches nothing)</div>`;
    default: return `<pre>${json(block)}</pre>`;
  }
}

function renderEntry(entry) {
  const node = el("article", { class: `entry kind-${entry.kind}`, id: `entry-${entry.id}`, "data-entry-id": entry.id });
  const head = `<div class="meta">${esc(entry.kind)} · ${esc(when(entry.createdAt))} · <code>${esc(entry.id)}</code></div>`;
  if (entry.kind === "message") {
    const message = entry.message;
    node.classList.add(`role-${message.role}`);
    node.innerHTML = `<div class="role">${esc(message.role)}</div>${head}${(message.content || []).map(renderBlock).join("")}`;
  } else if (entry.kind === "compaction") {
    node.innerHTML = `<div class="role">compaction</div>${head}<details open><summary>summary (${fmt((entry.data.keepEntryIds || []).length)} entries kept)</summary><div class="md">${markdown(entry.summary || "")}</div></details>`;
  } else if (entry.kind === "custom") {
    const data = entry.data || {};
    const label = entry.customType === "prism.checkpoint" ? `checkpoint: step ${data.step} ${data.phase}${data.status ? " " + data.status : ""}` : entry.customType;
    node.innerHTML = `<details class="custom"><summary>${esc(label)}</summary>${head}<pre>${json(data)}</pre></details>`;
  } else {
    node.innerHTML = `${head}<pre>${json(entry)}</pre>`;
  }
  return node;
}

// --- sessions ---------------------------------------------------------------
async function loadSessions() {
  const { sessions } = await api("/api/sessions");
  const body = $("sessions").querySelector("tbody");
  body.innerHTML = "";
  for (const s of sessions) {
    const row = el("tr", { "data-session": s.id, class: s.id === state.session ? "selected" : "" },
      `<td><a href="#">${esc(s.id)}</a></td><td>${fmt(s.entries)}</td><td>${esc(when(s.lastActivity))}</td><td>${fmt(s.cost)}</td>`);
    row.addEventListener("click", (ev) => { ev.preventDefault(); selectSession(s.id, null); });
    body.appendChild(row);
  }
  return sessions;
}

async function selectSession(id, leaf) {
  state.session = id; state.leaf = leaf; state.stale = {}; state.highlight = null;
  for (const row of $("sessions").querySelectorAll("tr[data-session]")) {
    row.classList.toggle("selected", row.dataset.session === id);
  }
  if (!DATA) history.replaceState(null, "", `${location.pathname}${location.search}#session=${encodeURIComponent(id)}`);
  const { summary, tree } = await api("/api/session", params());
  $("session-title").textContent = id;
  $("session-meta").textContent = `${fmt(summary.entries)} entries · ${fmt(summary.branchEntries)} on this branch · ${fmt(summary.turns)} turns · cost ${fmt(summary.cost)}`;
  renderTree(tree);
  await loadMessages(null);
  for (const tab of ["timeline", "costs", "memory", "checkpoints", "replay"]) state.stale[tab] = true;
  await showTab(currentTab());
  startTail();
}

function params(extra) {
  const p = { id: state.session, ...(extra || {}) };
  if (state.leaf) p.leaf = state.leaf;
  return p;
}

// --- messages ---------------------------------------------------------------
async function loadMessages(offset, around) {
  const extra = { limit: PAGE };
  if (offset !== null && offset !== undefined) extra.offset = offset;
  if (around) extra.around = around;
  const page = await api("/api/messages", params(extra));
  state.msgOffset = page.offset; state.msgTotal = page.total;
  const box = $("messages");
  box.innerHTML = ""; state.rendered = new Set();
  for (const entry of page.entries) { box.appendChild(renderEntry(entry)); state.rendered.add(entry.id); }
  if (page.entries.length && page.offset + page.entries.length === page.total) state.lastEntryId = page.entries[page.entries.length - 1].id;
  $("older").hidden = page.offset === 0;
  if (around) {
    const target = $(`entry-${around}`);
    if (target) { target.classList.add("highlight"); target.scrollIntoView({ block: "center" }); }
  }
}

// --- tree -------------------------------------------------------------------
function renderTree(tree) {
  const children = new Map();
  const ids = new Set(tree.nodes.map((n) => n.id));
  for (const node of tree.nodes) {
    const parent = ids.has(node.parent) ? node.parent : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(node);
  }
  const build = (parent) => {
    const list = el("ul");
    for (const node of children.get(parent) || []) {
      const item = el("li", { class: `node${node.onBranch ? " on-branch" : ""}${node.leaf ? " leaf" : ""}`, "data-node": node.id });
      const hidden = node.hidden ? `<span class="hidden-count">… ${fmt(node.hidden)} entries</span> ` : "";
      const marks = [node.kind === "compaction" ? '<span class="badge compaction">compaction</span>' : "",
        node.children > 1 ? `<span class="badge fork">fork ×${node.children}</span>` : "",
        node.label ? `<span class="badge label">${esc(node.label)}</span>` : "",
        node.leaf ? '<span class="badge leaf">leaf</span>' : ""].join("");
      item.innerHTML = `${hidden}<span class="preview">${esc(node.preview)}</span> ${marks}`;
      if (node.leaf) item.querySelector(".preview").addEventListener("click", () => selectSession(state.session, node.id));
      const sub = build(node.id);
      if (sub.children.length) item.appendChild(sub);
      list.appendChild(item);
    }
    return list;
  };
  const box = $("tree");
  box.innerHTML = tree.truncated ? `<p class="note">${fmt(tree.truncated)} older nodes not shown</p>` : "";
  box.appendChild(build(null));
}

// --- timeline ---------------------------------------------------------------
async function loadTimeline(offset) {
  const extra = { limit: STEP_PAGE };
  if (offset !== null && offset !== undefined) extra.offset = offset;
  const page = await api("/api/timeline", params(extra));
  state.stepOffset = page.offset;
  $("timeline-counts").innerHTML = Object.entries(page.counts).map(([k, n]) => `<span class="step-kind kind-${esc(k)}">${esc(k)} ${fmt(n)}</span>`).join(" ");
  const longest = Math.max(1, ...page.steps.map((s) => s.durationMs || 0));
  const list = $("timeline");
  list.innerHTML = "";
  for (const step of page.steps) {
    const width = step.durationMs ? Math.max(1, Math.round(200 * step.durationMs / longest)) : 0;
    const item = el("li", { class: `step kind-${step.kind}${step.status === "error" ? " is-error" : ""}`, "data-kind": step.kind, "data-entry": step.entryId },
      `<span class="step-kind kind-${esc(step.kind)}">${esc(step.kind)}</span> <span class="title">${esc(step.title)}</span>` +
      `<span class="duration">${step.durationMs === null ? "–" : fmt(step.durationMs) + " ms"}</span><span class="bar"></span>` +
      (step.checkpointed ? '<span class="badge">checkpointed</span>' : ""));
    item.querySelector(".bar").style.width = `${width}px`;
    item.addEventListener("click", () => jumpTo(step.entryId));
    list.appendChild(item);
  }
  $("older-steps").hidden = page.offset === 0;
}

async function jumpTo(entryId) {
  await showTab("messages");
  await loadMessages(null, entryId);
}

// --- costs ------------------------------------------------------------------
function pct(v) { return v === null || v === undefined ? "–" : `${(v * 100).toFixed(1)} %`; }

function calibrationTable(rows) {
  if (!rows || !rows.length) return '<p class="note">No token calibration recorded on this branch.</p>';
  const head = "<tr><th>model</th><th>samples</th><th>prose</th><th>code</th><th>tool</th><th>scale</th><th>last est. / billed</th><th>last error</th></tr>";
  return "<h3>Token calibration</h3><table>" + head + rows.map((r) => r.problem
    ? `<tr class="damaged"><td colspan="8">damaged record <code>${esc(r.entryId)}</code>: ${esc(r.problem)}</td></tr>`
    : `<tr data-model="${esc(r.model)}"><td><code>${esc(r.model)}</code></td><td>${fmt(r.turns)}</td><td>${r.ratios.prose}</td><td>${r.ratios.code}</td><td>${r.ratios.tool}</td><td>${r.scale}</td><td>${fmt(r.calibratedTokens)} / ${fmt(r.reportedTokens)}</td><td class="error">${pct(r.lastError)}</td></tr>`).join("") + "</table>";
}

async function loadCosts() {
  const { totals, turns, calibration } = await api("/api/costs", params());
  $("cost-calibration").innerHTML = calibrationTable(calibration);
  const rows = [["requests", "total-requests", totals.requests], ["input tokens (estimated)", "total-input", totals.totalInputTokens],
    ["peak input tokens", "total-peak", totals.peakInputTokens], ["cache reads", "total-read", totals.cacheReadTokens],
    ["cache writes", "total-write", totals.cacheWriteTokens], ["cache-aware cost", "total-cost", totals.cacheAwareCost],
    ["cache busts", "total-busts", totals.cacheBusts], ["gate trips", "total-trips", totals.gateTrips],
    ["requests over the window", "total-over", totals.requestsOverWindow], ["window", "total-window", totals.window]];
  $("cost-totals").innerHTML = rows.map(([name, id, v]) => `<tr><th>${name}</th><td id="${id}">${fmt(v)}</td></tr>`).join("");
  $("cost-chart").innerHTML = chart(turns, totals.window);
  const last = turns.slice(-50);
  $("cost-turns").innerHTML = "<tr><th>turn</th><th>input est.</th><th>input reported</th><th>cache read</th><th>cache write</th><th>cost</th><th>bust</th><th>trip</th></tr>" +
    last.map((t) => `<tr data-turn="${t.turn}"><td>${t.turn}</td><td>${fmt(t.inputTokens)}</td><td>${fmt(t.reportedInputTokens)}</td><td>${fmt(t.cacheReadTokens)}</td><td>${fmt(t.cacheWriteTokens)}</td><td>${fmt(t.cost)}</td><td>${t.bust ? "bust" : ""}</td><td>${t.gateTrip ? "trip" : ""}</td></tr>`).join("");
}

function chart(turns, windowLine) {
  if (!turns.length) return '<p class="note">No provider turns on this branch.</p>';
  const W = 760, H = 220, pad = 40;
  const buckets = Math.min(turns.length, 600);
  const per = turns.length / buckets;
  const bars = [];
  for (let b = 0; b < buckets; b++) {
    const slice = turns.slice(Math.floor(b * per), Math.max(Math.floor((b + 1) * per), Math.floor(b * per) + 1));
    const top = slice.reduce((m, t) => (t.inputTokens > m.inputTokens ? t : m), slice[0]);
    bars.push({ ...top, bust: slice.some((t) => t.bust), gateTrip: slice.some((t) => t.gateTrip) });
  }
  const peak = Math.max(1, ...bars.map((t) => Math.max(t.inputTokens, t.reportedInputTokens || 0)));
  // The window is drawn when it is within reach; far above, it would flatten every bar.
  const windowShown = windowLine <= peak * 3;
  const maxY = (windowShown ? Math.max(windowLine, peak) : peak) * 1.05;
  const y = (v) => H - pad - (H - 2 * pad) * v / maxY;
  const bw = (W - 2 * pad) / buckets;
  const parts = [`<svg class="chart" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="input tokens per turn">`];
  bars.forEach((t, i) => {
    const x = pad + i * bw;
    parts.push(`<rect class="read" x="${x}" y="${y(t.cacheReadTokens)}" width="${Math.max(bw - 1, 1)}" height="${H - pad - y(t.cacheReadTokens)}"><title>turn ${t.turn}: read ${t.cacheReadTokens}</title></rect>`);
    parts.push(`<rect class="write" x="${x}" y="${y(t.inputTokens)}" width="${Math.max(bw - 1, 1)}" height="${y(t.cacheReadTokens) - y(t.inputTokens)}"><title>turn ${t.turn}: write ${t.cacheWriteTokens}</title></rect>`);
    if (t.reportedInputTokens !== null) parts.push(`<circle class="reported" cx="${x + bw / 2}" cy="${y(t.reportedInputTokens)}" r="2.5"/>`);
    if (t.bust) parts.push(`<text class="bust" x="${x + bw / 2}" y="${pad - 6}" text-anchor="middle">▼</text>`);
    if (t.gateTrip) parts.push(`<text class="trip" x="${x + bw / 2}" y="${pad - 18}" text-anchor="middle">◆</text>`);
  });
  if (windowShown) parts.push(`<line class="window" x1="${pad}" x2="${W - pad}" y1="${y(windowLine)}" y2="${y(windowLine)}"/><text class="axis" x="${W - pad}" y="${y(windowLine) - 4}" text-anchor="end">window ${fmt(windowLine)}</text>`);
  else parts.push(`<text class="axis" x="${W - pad}" y="${pad - 28}" text-anchor="end">window ${fmt(windowLine)} (above the chart)</text>`);
  parts.push(`<text class="axis" x="${pad}" y="${H - 8}">turn 1</text><text class="axis" x="${W - pad}" y="${H - 8}" text-anchor="end">turn ${turns.length}</text>`);
  parts.push(`<text class="axis" x="4" y="${y(maxY / 1.05) + 4}">${fmt(Math.round(maxY / 1.05))}</text></svg>`);
  parts.push('<p class="legend"><span class="sw read"></span>cache read <span class="sw write"></span>cache write ● reported ▼ cache bust ◆ gate trip — window line dashed</p>');
  return parts.join("");
}

// --- memory and checkpoints -------------------------------------------------
async function loadMemory() {
  const { records } = await api("/api/memory", params());
  const box = $("memory");
  if (!records.length) { box.innerHTML = '<p class="note">No memory records on this branch.</p>'; return; }
  box.innerHTML = "";
  for (const r of records) {
    const links = (r.sources || []).map((s) => `<a href="#" class="source" data-entry="${esc(s)}">${esc(s)}</a>`).join(" ");
    const missing = (r.missingSources || []).length ? ` <span class="note">missing: ${esc(r.missingSources.join(", "))}</span>` : "";
    const item = el("div", { class: `memory kind-${r.kind}` }, `<span class="badge">${esc(r.kind)}</span> <code>${esc(r.id)}</code> ${esc(r.content || "")}<div class="sources">${links}${missing}</div>`);
    box.appendChild(item);
  }
  for (const a of box.querySelectorAll("a.source")) a.addEventListener("click", (ev) => { ev.preventDefault(); jumpTo(a.dataset.entry); });
}

async function loadCheckpoints() {
  const { runs } = await api("/api/checkpoints", params());
  $("checkpoints").innerHTML = runs.length ? runs.map((run) => `<div class="run"><h3><code>${esc(run.runId)}</code> <span class="badge state">${esc(run.state)}</span></h3><table><tr><th>step</th><th>phase</th><th>status</th><th>pending tools</th><th>at</th></tr>${run.checkpoints.map((c) => `<tr><td>${c.step}</td><td>${esc(c.phase)}</td><td>${esc(c.status || "")}</td><td>${esc((c.pendingToolCalls || []).join(", "))}</td><td>${esc(when(c.at))}</td></tr>`).join("")}</table></div>`).join("") : '<p class="note">No durable checkpoints on this branch.</p>';
}

// --- replay -----------------------------------------------------------------
async function loadRuns() {
  const box = $("runs");
  if (DATA) { box.innerHTML = '<p class="note">Replay runs in the live inspector (prism inspect), not in an exported report.</p>'; return; }
  const { runs } = await api("/api/runs", params());
  box.innerHTML = runs.length ? "" : '<p class="note">No recorded runs with provider turns.</p>';
  for (const run of runs) {
    const row = el("div", { class: "run-row" }, `<code>${esc(run.runId)}</code> ${fmt(run.turns)} turns ${run.durable ? "(durable)" : ""} <button>Replay</button>`);
    row.querySelector("button").addEventListener("click", () => replay(run.runId));
    box.appendChild(row);
  }
}

function replay(runId) {
  const list = $("replay-events");
  list.innerHTML = "";
  const query = new URLSearchParams({ token: TOKEN, ...params({ run: runId }) });
  const source = new EventSource(`api/replay?${query}`);
  source.addEventListener("event", (msg) => {
    const event = JSON.parse(msg.data);
    const detail = event.type === "message_delta" ? event.delta.text : event.type === "tool_call" ? event.toolCall.name : event.type === "tool_result" ? preview(event.result.value, 60) : "";
    list.appendChild(el("li", { class: `replay-event type-${event.type}` }, `<b>${esc(event.type)}</b> ${esc(detail)}`));
  });
  source.addEventListener("done", () => { source.close(); list.appendChild(el("li", { class: "replay-done" }, "replay finished")); });
  source.onerror = () => source.close();
}

// --- live tail --------------------------------------------------------------
function startTail() {
  if (DATA) return;
  if (state.tail) state.tail.close();
  const query = new URLSearchParams({ token: TOKEN, id: state.session });
  if (state.lastEntryId) query.set("after", state.lastEntryId);
  const source = new EventSource(`api/tail?${query}`);
  state.tail = source;
  source.onopen = () => $("live").classList.replace("off", "on");
  source.onerror = () => $("live").classList.replace("on", "off");
  source.addEventListener("entry", (msg) => {
    const entry = JSON.parse(msg.data);
    state.lastEntryId = entry.id;
    state.msgTotal += 1;
    for (const tab of ["timeline", "costs", "memory", "checkpoints", "replay"]) state.stale[tab] = true;
    if (state.leaf || state.rendered.has(entry.id)) return;
    const node = renderEntry(entry);
    node.classList.add("new");
    $("messages").appendChild(node);
    state.rendered.add(entry.id);
    window.prismTailRendered = { id: entry.id, at: performance.timeOrigin + performance.now() };
    if (currentTab() === "messages") node.scrollIntoView({ block: "end" });
  });
}

// --- tabs -------------------------------------------------------------------
const LOADERS = { timeline: () => loadTimeline(null), costs: loadCosts, memory: loadMemory, checkpoints: loadCheckpoints, replay: loadRuns };
function currentTab() { const b = document.querySelector("#tabs button.active"); return b ? b.dataset.tab : "messages"; }
async function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== `view-${name}`;
  if (state.session && LOADERS[name] && state.stale[name] !== false) {
    state.stale[name] = false;
    await LOADERS[name]();
  }
}

async function start() {
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab).catch((e) => showError(e.message)));
  $("older").addEventListener("click", () => loadMessages(Math.max(0, state.msgOffset - PAGE)).catch((e) => showError(e.message)));
  $("older-steps").addEventListener("click", () => loadTimeline(Math.max(0, state.stepOffset - STEP_PAGE)).catch((e) => showError(e.message)));
  if (DATA) $("live").textContent = "offline report";
  const info = await api("/api/info");
  $("source").textContent = `${info.source} (${info.kind})`;
  if (info.quarantine && info.quarantine.length) {
    const box = $("quarantine");
    box.hidden = false;
    box.innerHTML = `<b>${fmt(info.quarantine.length)} line(s) quarantined</b>: the rest of the file is shown.<ul>${info.quarantine.slice(0, 20).map((q) => `<li>line ${q.line}: ${esc(q.reason)}</li>`).join("")}</ul>`;
  }
  const sessions = await loadSessions();
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session") || info.follow || (sessions[0] && sessions[0].id);
  if (wanted) await selectSession(wanted, null);
  window.prismReadyAt = performance.now();
  document.body.dataset.ready = "1";
}

start().catch((e) => showError(e.message));
