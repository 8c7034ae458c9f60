// gpusched page. Reads /gpusched/v1/summary (aggregates: node groups by pool and GPU model,
// allocation, fragmentation, pending pods, events, history) and, for each group that is open,
// pages of its nodes with their GPU cells from /gpusched/v1/summary/nodes (50 at a time, the
// next page when the end of the list scrolls into view). Filters (namespace, node, GPU model,
// phase) and the search box go to the server as query parameters, so at 1,000 nodes and 20,000
// pods the browser only ever holds what is shown. Re-reads whenever the watch API reports a
// change to pods, nodes or events (coalesced; the watches start at the summary's
// resourceVersion, so no initial list of 20,000 pods, and reconnect from the last one seen).
// Read-only: it only sends GETs. Every server string is shown with textContent or an
// attribute, never parsed as markup. Once the summary and every open group's nodes for the
// current filters are shown, <body data-filtered="QUERY"> names those filters (QUERY as sent to
// the server, "" for none): a reader (or a test) knows the filtered view is complete.
"use strict";

const PAGE = 50;
const EXPAND_ALL_UNDER = 100;            // clusters this small open every group at first
const FILTERS = ["namespace", "node", "model", "phase", "q"];
const state = { data: null, colourBy: "namespace", refetch: null, open: new Map(),
                loaded: new Map(), filter: {}, generation: 0 };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-") || key === "title" || key === "role") node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

// ---- colours -----------------------------------------------------------------------------
// Okabe & Ito (2008), "Color Universal Design" (https://jfly.uni-koeln.de/color/): eight
// colours told apart with every common colour-vision deficiency. Namespaces take them in sorted
// order; from the ninth on, the same colours come back hatched.
const OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000"];
// viridis (van der Walt & Smith, matplotlib), perceptually uniform and colour-blind safe.
const VIRIDIS = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"];

function namespaceColour(namespace) {
  const names = (state.data && state.data.namespaces) || [];
  const i = Math.max(0, names.indexOf(namespace));
  const base = OKABE_ITO[i % OKABE_ITO.length];
  return i < OKABE_ITO.length ? base
    : `repeating-linear-gradient(45deg, ${base} 0 3px, #fff 3px 5px)`;
}

function priorityColour(priority) {        // log scale: 0 -> dark purple, 1e6 and above -> yellow
  const t = Math.min(1, Math.log10(1 + Math.max(0, priority)) / 6);
  return VIRIDIS[Math.round(t * (VIRIDIS.length - 1))];
}

function colour(cell) {
  if (!cell.pod) return "";
  return state.colourBy === "priority" ? priorityColour(cell.priority) : namespaceColour(cell.namespace);
}

// ---- filters -------------------------------------------------------------------------------

function query(extra = {}) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...state.filter, ...extra })) if (v !== "" && v !== undefined) params.set(k, v);
  const text = params.toString();
  return text ? `?${text}` : "";
}

function filterActive() { return FILTERS.some((k) => state.filter[k]); }

function cellMatches(cell, nodeHit) {       // dims cells of pods the filter does not name
  const f = state.filter;
  if (!f.namespace && !f.phase && (!f.q || nodeHit)) return true;
  if (!cell.pod) return false;
  return (!f.namespace || cell.namespace === f.namespace) && (!f.phase || cell.phase === f.phase)
    && (!f.q || nodeHit || cell.pod.toLowerCase().includes(f.q.toLowerCase()));
}

function fillSelect(id, values, label) {
  const select = document.getElementById(id);
  const current = select.value;
  const wanted = ["", ...values];
  const have = [...select.options].map((o) => o.value);
  if (have.length === wanted.length && have.every((v, i) => v === wanted[i])) return;
  select.replaceChildren(el("option", { value: "" }, label), ...values.map((v) => el("option", { value: v }, v)));
  select.value = values.includes(current) ? current : "";
}

function readFilters() {
  state.filter = {
    namespace: document.getElementById("f-namespace").value,
    node: document.getElementById("f-node").value.trim(),
    model: document.getElementById("f-model").value,
    phase: document.getElementById("f-phase").value,
    q: document.getElementById("search").value.trim(),
  };
  state.loaded.clear();
  reload();
}

// ---- groups and nodes ----------------------------------------------------------------------

function groupText(group) {
  const pct = (v) => `${(100 * v).toFixed(0)}%`;
  const parts = [`${group.nodes} node${group.nodes === 1 ? "" : "s"}`, `${group.gpus} GPUs`,
                 `${pct(group.allocation)} allocated`, `${pct(group.fragmentation)} fragmented`];
  if (group.cordoned) parts.push(`${group.cordoned} cordoned`);
  if (filterActive()) parts.unshift(`${group.matching} of ${group.nodes} match`);
  return parts.join(" · ");
}

function groupBar(group) {                   // pods on the group's nodes, by namespace
  const bar = el("span", { class: "ns-bar", role: "img" });
  const counts = Object.entries(group.namespaces).map(([ns, phases]) =>
    [ns, Object.values(phases).reduce((a, b) => a + b, 0)]).sort();
  const total = counts.reduce((a, [, n]) => a + n, 0);
  bar.setAttribute("aria-label", counts.map(([ns, n]) => `${ns}: ${n} pods`).join(", ") || "no pods");
  for (const [ns, n] of counts) {
    const part = el("span", { title: `${ns}: ${n} pod${n === 1 ? "" : "s"}` });
    part.style.flexGrow = String(n / Math.max(total, 1));
    part.style.background = namespaceColour(ns);
    bar.append(part);
  }
  return bar;
}

function groupElement(group) {
  const root = document.getElementById("groups");
  let details = [...root.children].find((d) => d.dataset.group === group.id);
  if (!details) {
    details = el("details", { class: "group", "data-group": group.id });
    details.append(el("summary", {}), el("div", { class: "group-nodes" }),
                   el("button", { class: "more", type: "button", hidden: true }, "more nodes"));
    details.addEventListener("toggle", () => {
      state.open.set(group.id, details.open);
      if (details.open && !details.loading) loadNodes(details, 0);   // opened by the user
    });
    details.querySelector(".more").addEventListener("click", () => loadMore(details));
    more.observe(details.querySelector(".more"));
  }
  return details;
}

function renderGroups(data) {
  const root = document.getElementById("groups");
  const ids = new Set(data.groups.map((g) => g.id));
  for (const old of [...root.children]) if (!ids.has(old.dataset.group)) old.remove();
  const defaultOpen = data.totals.nodes <= EXPAND_ALL_UNDER;
  for (const group of data.groups) {
    const details = groupElement(group);
    const summary = details.querySelector("summary");
    summary.replaceChildren(el("span", { class: "group-name" }, group.pool, " / ", group.model || "no GPU"),
                            el("span", { class: "group-stats" }, groupText(group)), groupBar(group));
    details.hidden = filterActive() && group.matching === 0;
    root.append(details);                   // keeps the server's order
    const open = state.open.has(group.id) ? state.open.get(group.id) : defaultOpen;
    if (open && !details.hidden) {           // a hidden group keeps its open state
      details.open = true;
      loadNodes(details, 0, Math.max(PAGE, state.loaded.get(group.id) || 0));
    }
  }
}

function loadNodes(details, offset, limit = PAGE) {   // details.loading: the latest load
  const load = readNodes(details, offset, limit)
    .finally(() => { if (details.loading === load) details.loading = null; });
  details.loading = load;
  return load;
}

async function markFiltered(generation) {   // <body data-filtered>: see the top of this file
  for (;;) {
    const loads = [...document.querySelectorAll("#groups details")].map((d) => d.loading).filter(Boolean);
    if (!loads.length) break;
    await Promise.allSettled(loads);
  }
  if (generation === state.generation) document.body.setAttribute("data-filtered", query());
}

async function readNodes(details, offset, limit) {
  const id = details.dataset.group;
  const generation = state.generation;
  const token = (details.token = (details.token || 0) + 1);   // a later load of this group wins
  const nodes = [];
  let total = 0;
  for (let at = offset; at < offset + limit; at += 200) {   // the server's page is at most 200
    const response = await fetch(`/gpusched/v1/summary/nodes${query({ group: id, offset: at,
                                 limit: Math.min(200, offset + limit - at) })}`, { cache: "no-store" });
    if (!response.ok || generation !== state.generation || token !== details.token) return;
    const page = await response.json();
    // a newer filter or load began while the body arrived: its answer is the one to show
    if (generation !== state.generation || token !== details.token) return;
    nodes.push(...page.nodes);
    total = page.total;
    if (at + page.nodes.length >= total) break;
  }
  const list = details.querySelector(".group-nodes");
  if (offset === 0) list.replaceChildren();
  for (const node of nodes) list.append(renderNode(node));
  state.loaded.set(id, offset + nodes.length);
  const button = details.querySelector(".more");
  button.hidden = offset + nodes.length >= total;
  button.textContent = `more nodes (${offset + nodes.length} of ${total} shown)`;
  details.setAttribute("data-loaded", String(offset + nodes.length));
}

function loadMore(details) {
  if (!details.open || details.dataset.busy) return;
  details.dataset.busy = "1";
  loadNodes(details, state.loaded.get(details.dataset.group) || 0)
    .finally(() => { delete details.dataset.busy; });
}

const more = new IntersectionObserver((entries) => {      // lazy: the next page on scroll
  for (const entry of entries) {
    if (entry.isIntersecting && !entry.target.hidden) loadMore(entry.target.closest("details"));
  }
}, { rootMargin: "400px" });

function cellTitle(cell) {
  const what = cell.profile ? `MIG ${cell.profile}` : cell.replica >= 0 ? `replica ${cell.replica}`
    : cell.resource === "gpusched.io/gpu-milli" ? `${cell.milli} milli-GPU` : "whole GPU";
  const holder = cell.pod ? `${cell.pod} (priority ${cell.priority})` : "free";
  return `GPU ${cell.gpu} ${what}: ${holder}`;
}

function renderNode(node) {
  const gpus = el("div", { class: "gpus" });
  const byGpu = new Map();
  for (const cell of node.cells) {
    if (!byGpu.has(cell.gpu)) byGpu.set(cell.gpu, []);
    byGpu.get(cell.gpu).push(cell);
  }
  const q = (state.filter.q || "").toLowerCase();
  const nodeHit = !!q && [node.name, node.pool, node.model].some((t) => t.toLowerCase().includes(q));
  for (const [index, cells] of byGpu) {
    const box = el("div", { class: "gpu", "data-gpu": String(index),
                            title: `GPU ${index}: ${Math.round(100 * (node.usage[index] || 0))}% used` });
    for (const cell of cells) {
      const fraction = cell.resource === "gpusched.io/gpu-milli";
      const div = el("div", {
        class: "cell" + (cell.pod ? " occupied" : "") + (fraction ? " fraction" : "") +
               (cellMatches(cell, nodeHit) ? "" : " dim"),
        "data-node": node.name, "data-gpu": String(cell.gpu), title: cellTitle(cell) });
      if (cell.pod) div.setAttribute("data-pod", cell.pod);
      if (cell.namespace) div.setAttribute("data-namespace", cell.namespace);
      if (fraction) div.style.flexBasis = `${Math.max(2, cell.milli / 10)}%`;
      if (!fraction) div.style.flexGrow = String(cell.profile ? parseInt(cell.profile, 10) || 1 : 1);
      if (cell.pod) div.style.background = colour(cell);
      box.append(div);
    }
    gpus.append(box);
  }
  const label = el("div", { class: "node-name" }, node.name,
                   el("small", {}, node.model ? `${node.gpus}x ${node.model}` : "no GPU"));
  return el("div", { class: "node" + (node.unschedulable ? " cordoned" : ""), "data-node": node.name },
            label, gpus);
}

function renderLegend(data) {
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  const swatch = (text, background, attrs = {}) => {
    const span = el("span", attrs, text);
    span.style.setProperty("--c", background);
    legend.append(span);
  };
  if (state.colourBy === "priority") {
    for (const p of [0, 100, 10000, 1000000]) swatch(`priority ${p}`, priorityColour(p));
    return;
  }
  for (const ns of data.namespaces) swatch(ns, namespaceColour(ns), { "data-namespace": ns });
}

// ---- pending pods and events -----------------------------------------------------------------

function renderPending(data) {
  const body = document.querySelector("#pending tbody");
  body.replaceChildren();
  for (const pod of data.pending) {
    const why = el("button", { class: "why", type: "button", title: "gpusched explain" }, "explain");
    why.addEventListener("click", () => explain(pod.namespace, pod.name));
    body.append(el("tr", { "data-pod": pod.pod }, el("td", {}, pod.pod), el("td", {}, String(pod.priority)),
                   el("td", {}, pod.schedulerName), el("td", { class: "msg" }, pod.message || "(not tried yet)", " ", why)));
  }
  document.getElementById("pending-count").textContent = data.pendingTotal > data.pending.length
    ? `(first ${data.pending.length} of ${data.pendingTotal})` : `(${data.pendingTotal})`;
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
    body.append(el("tr", { class: e.type === "Warning" ? "Warning" : "" }, el("td", {}, e.type), el("td", {}, e.reason),
                   el("td", {}, e.object), el("td", {}, e.source),
                   el("td", { class: "msg" }, e.message + (e.count > 1 ? ` (x${e.count})` : ""))));
  }
}

// ---- data ------------------------------------------------------------------------------------

function render() {
  const data = state.data;
  if (!data) return;
  fillSelect("f-namespace", data.namespaces, "all namespaces");
  fillSelect("f-model", data.models, "all GPU models");
  fillSelect("f-phase", data.phases, "all phases");
  renderGroups(data);
  renderLegend(data);
  renderChart(data.history || []);
  renderPending(data);
  renderEvents(data.events);
  const t = data.totals;
  document.getElementById("totals").textContent =
    `${t.nodes} nodes · ${t.gpus} GPUs · ${t.pods} pods · allocation ${(100 * data.allocation).toFixed(1)}% · ` +
    `fragmentation ${(100 * data.fragmentation).toFixed(1)}% · ${t.pending} pending` +
    (filterActive() ? ` · ${t.matching} nodes match` : "");
  document.body.setAttribute("data-resource-version", data.resourceVersion);
}

async function loadSummary() {
  const generation = state.generation;
  const response = await fetch(`/gpusched/v1/summary${query()}`, { cache: "no-store" });
  if (!response.ok || generation !== state.generation) return;
  const data = await response.json();
  if (generation !== state.generation) return;      // a newer filter began meanwhile
  state.data = data;
  render();
  await markFiltered(generation);
}

function reload() {                     // a new filter: earlier answers in flight are dropped
  state.generation += 1;
  for (const details of document.querySelectorAll("#groups details")) {
    details.querySelector(".group-nodes").replaceChildren();
    details.removeAttribute("data-loaded");
  }
  loadSummary();
}

function scheduleRefetch() {          // coalesce bursts of watch events into one summary fetch
  if (state.refetch) return;
  state.refetch = setTimeout(async () => {
    state.refetch = null;
    await loadSummary();
  }, 250);
}

async function watch(path) {      // from the summary's version: no initial list of every object
  let resourceVersion = state.data ? state.data.resourceVersion : "";
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
          if (event.type === "ERROR") {         // 410 Gone: re-read, go on from the newest summary
            resourceVersion = state.data ? state.data.resourceVersion : "";
            scheduleRefetch();
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
  render();                            // re-reads the open groups' nodes with the new colours
});
for (const id of ["f-namespace", "f-model", "f-phase"]) document.getElementById(id).addEventListener("change", readFilters);
let typing = null;                     // text filters apply 200 ms after the last key
for (const id of ["f-node", "search"]) {
  document.getElementById(id).addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(readFilters, 200);
  });
}
document.getElementById("clear-filters").addEventListener("click", () => {
  for (const id of ["f-namespace", "f-model", "f-phase", "f-node", "search"]) document.getElementById(id).value = "";
  readFilters();
});

loadSummary().then(() => {
  for (const path of ["/api/v1/pods", "/api/v1/nodes", "/api/v1/events"]) watch(path);
});
