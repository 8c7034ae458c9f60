// gpusched page. Reads /gpusched/v1/summary (GPU cells with holders, allocation, fragmentation,
// pending pods, events, history) and re-reads it whenever the watch API reports a change to pods,
// nodes or events (fetch with a streaming reader; reconnects from the last resourceVersion, and
// from scratch after 410 Gone). Read-only: it only sends GETs.
"use strict";

const state = { data: null, colourBy: "namespace", refetch: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-") || key === "title") node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

// ---- colours -----------------------------------------------------------------------------

function hue(text) {                      // stable hue per namespace
  let h = 0;
  for (const ch of text) h = (h * 31 + ch.charCodeAt(0)) % 360;
  return h;
}

function colour(cell) {
  if (!cell.pod) return "";
  if (state.colourBy === "priority") {    // log scale: 0 -> blue, 1e6 and above -> red
    const p = Math.max(0, cell.priority);
    const t = Math.min(1, Math.log10(1 + p) / 6);
    return `hsl(${Math.round(220 - 220 * t)}, 70%, 50%)`;
  }
  return `hsl(${hue(cell.namespace)}, 60%, 52%)`;
}

// ---- nodes ---------------------------------------------------------------------------------

function cellTitle(cell) {
  const what = cell.profile ? `MIG ${cell.profile}` : cell.replica >= 0 ? `replica ${cell.replica}`
    : cell.resource === "gpusched.io/gpu-milli" ? `${cell.milli} milli-GPU` : "whole GPU";
  const holder = cell.pod ? `${cell.pod} (priority ${cell.priority})` : "free";
  return `GPU ${cell.gpu} ${what}: ${holder}`;
}

function renderNodes(data) {
  const root = document.getElementById("nodes");
  root.replaceChildren();
  for (const node of data.nodes) {
    const gpus = el("div", { class: "gpus" });
    const byGpu = new Map();
    for (const cell of node.cells) {
      if (!byGpu.has(cell.gpu)) byGpu.set(cell.gpu, []);
      byGpu.get(cell.gpu).push(cell);
    }
    for (const [index, cells] of byGpu) {
      const box = el("div", { class: "gpu", "data-gpu": String(index),
                              title: `GPU ${index}: ${Math.round(100 * (node.usage[index] || 0))}% used` });
      for (const cell of cells) {
        const fraction = cell.resource === "gpusched.io/gpu-milli";
        const div = el("div", {
          class: "cell" + (cell.pod ? " occupied" : "") + (fraction ? " fraction" : ""),
          "data-node": node.name, "data-gpu": String(cell.gpu), title: cellTitle(cell) });
        if (cell.pod) div.setAttribute("data-pod", cell.pod);
        if (fraction) div.style.flexBasis = `${Math.max(2, cell.milli / 10)}%`;
        const weight = cell.profile ? parseInt(cell.profile, 10) || 1 : 1;
        if (!fraction) div.style.flexGrow = String(weight);
        if (cell.pod) div.style.background = colour(cell);
        box.append(div);
      }
      gpus.append(box);
    }
    const label = el("div", { class: "node-name" }, node.name,
                     el("small", {}, node.model ? `${node.gpus}x ${node.model}` : "no GPU"));
    root.append(el("div", { class: "node" + (node.unschedulable ? " cordoned" : ""),
                            "data-node": node.name }, label, gpus));
  }
  renderLegend(data);
}

function renderLegend(data) {
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  if (state.colourBy === "priority") {
    for (const p of [0, 100, 10000, 1000000]) {
      const span = el("span", {}, `priority ${p}`);
      span.style.setProperty("--c", colour({ pod: "x", priority: p }));
      legend.append(span);
    }
    return;
  }
  const namespaces = new Set();
  for (const node of data.nodes) for (const cell of node.cells) if (cell.pod) namespaces.add(cell.namespace);
  for (const ns of [...namespaces].sort()) {
    const span = el("span", {}, ns);
    span.style.setProperty("--c", colour({ pod: "x", namespace: ns }));
    legend.append(span);
  }
}

// ---- chart -----------------------------------------------------------------------------------

function renderChart(history) {
  const svg = document.getElementById("chart");
  const ns = "http://www.w3.org/2000/svg";
  const W = 600, H = 160, L = 34, B = 18;
  svg.replaceChildren();
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  for (const v of [0, 0.5, 1]) {
    const y = H - B - v * (H - B - 8);
    add("line", { x1: L, x2: W, y1: y, y2: y, stroke: "#ddd" });
    add("text", { x: 2, y: y + 4, "font-size": 10, fill: "#777" }, `${v * 100}%`);
  }
  if (!history.length) return;
  const n = history.length;
  const x = (i) => L + (n === 1 ? (W - L) / 2 : (i * (W - L - 4)) / (n - 1));
  const y = (v) => H - B - v * (H - B - 8);
  const series = [["allocation", "#1e88e5"], ["fragmentation", "#fb8c00"]];
  series.forEach(([key, stroke], k) => {
    const points = history.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
    add("polyline", { points, fill: "none", stroke, "stroke-width": 2, "data-series": key });
    const last = history[n - 1][key];
    add("text", { x: L + 4 + k * 150, y: H - 4, "font-size": 11, fill: stroke },
        `${key} ${(100 * last).toFixed(1)}%`);
  });
}

// ---- pending pods and events -------------------------------------------------------------------

function renderPending(pending) {
  const body = document.querySelector("#pending tbody");
  body.replaceChildren();
  for (const pod of pending) {
    const why = el("button", { class: "why", type: "button", title: "gpusched explain" }, "explain");
    why.addEventListener("click", () => explain(pod.namespace, pod.name));
    body.append(el("tr", { "data-pod": pod.pod }, el("td", {}, pod.pod), el("td", {}, String(pod.priority)),
                   el("td", {}, pod.schedulerName), el("td", { class: "msg" }, pod.message || "(not tried yet)", " ", why)));
  }
}

async function explain(namespace, name) {
  const out = document.getElementById("explain");
  const response = await fetch(`/gpusched/v1/explain/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
  const body = await response.json();
  out.textContent = response.ok ? body.text : body.message;
  out.hidden = false;
}

function renderEvents(events) {
  const body = document.querySelector("#events tbody");
  body.replaceChildren();
  for (const e of [...events].reverse()) {
    body.append(el("tr", { class: e.type }, el("td", {}, e.type), el("td", {}, e.reason),
                   el("td", {}, e.object), el("td", {}, e.source),
                   el("td", { class: "msg" }, e.message + (e.count > 1 ? ` (x${e.count})` : ""))));
  }
}

// ---- data ------------------------------------------------------------------------------------

function render() {
  const data = state.data;
  if (!data) return;
  renderNodes(data);
  renderChart(data.history || []);
  renderPending(data.pending);
  renderEvents(data.events);
  document.getElementById("totals").textContent =
    `allocation ${(100 * data.allocation).toFixed(1)}% · fragmentation ${(100 * data.fragmentation).toFixed(1)}% · ` +
    `${data.pending.length} pending`;
  document.body.setAttribute("data-resource-version", data.resourceVersion);
}

async function loadSummary() {
  const response = await fetch("/gpusched/v1/summary", { cache: "no-store" });
  if (!response.ok) return;
  state.data = await response.json();
  render();
}

function scheduleRefetch() {          // coalesce bursts of watch events into one summary fetch
  if (state.refetch) return;
  state.refetch = setTimeout(async () => {
    state.refetch = null;
    await loadSummary();
  }, 150);
}

async function watch(path) {
  let resourceVersion = "";
  const live = document.getElementById("live");
  for (;;) {
    try {
      const rv = resourceVersion ? `&resourceVersion=${resourceVersion}` : "";
      const response = await fetch(`${path}?watch=true&allowWatchBookmarks=true${rv}`);
      if (!response.ok || !response.body) throw new Error(`watch ${path}: ${response.status}`);
      live.className = "live on";
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let newline;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          if (!line) continue;
          const event = JSON.parse(line);
          if (event.type === "ERROR") {         // 410 Gone: start again from now
            resourceVersion = "";
            continue;
          }
          resourceVersion = (event.object.metadata || {}).resourceVersion || resourceVersion;
          if (event.type !== "BOOKMARK") scheduleRefetch();
        }
      }
    } catch (error) {
      live.className = "live off";
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

document.getElementById("colour-by").addEventListener("change", (e) => {
  state.colourBy = e.target.value;
  render();
});

loadSummary().then(() => {
  for (const path of ["/api/v1/pods", "/api/v1/nodes", "/api/v1/events"]) watch(path);
});
