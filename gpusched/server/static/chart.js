// gpusched page: the allocation/fragmentation chart (SVG, no library). A time axis from the
// points' cluster clock (wall-clock times when the clock is a Unix time, else elapsed time),
// a 0-100 % axis with ticks, one line per series (allocation solid, fragmentation dashed, so
// the two differ without colour), and a hover read-out: a vertical guide at the nearest point
// and a tooltip with its time and both values.
"use strict";

const CHART = { W: 640, H: 200, L: 40, R: 12, T: 10, B: 34 };
// Okabe & Ito (2008), "Color Universal Design": blue and vermillion stay apart for
// protanopia, deuteranopia and tritanopia.
const SERIES = [["allocation", "#0072B2", ""], ["fragmentation", "#D55E00", "5 3"]];
const NICE_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                    21600, 43200, 86400, 172800, 604800, 2592000];

function svgAdd(parent, tag, attrs, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  parent.append(node);
  return node;
}

function pad(n) { return String(n).padStart(2, "0"); }

function formatClock(t, span) {          // Unix time -> UTC time of day; else elapsed time
  if (t > 1e8) {
    const d = new Date(t * 1000);
    const hm = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
    return span < 600 ? `${hm}:${pad(d.getUTCSeconds())}` : hm;
  }
  const s = Math.round(t);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? pad(s % 60) + "s" : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}`;
  return `${Math.floor(s / 86400)}d${pad(Math.floor((s % 86400) / 3600))}h`;
}

function timeTicks(t0, t1, most) {         // round times between t0 and t1, at most `most`
  const span = Math.max(t1 - t0, 1);
  const step = NICE_STEPS.find((s) => span / s <= most) || Math.ceil(span / most);
  const ticks = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) ticks.push(t);
  return ticks.length ? ticks : [t0];
}

function drawAxes(svg, x, y, t0, t1) {
  const { W, H, L, R, B } = CHART;
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    svgAdd(svg, "line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e0e0e0", class: "grid" });
    svgAdd(svg, "text", { x: L - 4, y: y(v) + 4, "font-size": 10, fill: "#555", "text-anchor": "end",
                          class: "tick y-tick" }, `${v * 100}%`);
  }
  svgAdd(svg, "line", { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#777", class: "x-axis" });
  for (const t of timeTicks(t0, t1, 6)) {
    svgAdd(svg, "line", { x1: x(t), x2: x(t), y1: H - B, y2: H - B + 4, stroke: "#777" });
    svgAdd(svg, "text", { x: x(t), y: H - B + 15, "font-size": 10, fill: "#555", "text-anchor": "middle",
                          class: "tick x-tick" }, formatClock(t, t1 - t0));
  }
  svgAdd(svg, "text", { x: W - R, y: H - 2, "font-size": 10, fill: "#555", "text-anchor": "end" },
         t0 > 1e8 ? "time (UTC)" : "cluster clock");
}

function nearest(history, t) {   // the point closest in time; of points at one time, the newest
  let lo = 0, hi = history.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (history[mid].clock < t) lo = mid + 1; else hi = mid;
  }
  if (lo > 0 && t - history[lo - 1].clock < history[lo].clock - t) lo -= 1;
  while (lo + 1 < history.length && history[lo + 1].clock === history[lo].clock) lo += 1;
  return lo;
}

function drawHover(svg, history, x, y, t0, t1) {
  const { W, H, L, R, T, B } = CHART;
  const guide = svgAdd(svg, "line", { y1: T, y2: H - B, stroke: "#333", "stroke-dasharray": "2 2",
                                       visibility: "hidden", class: "guide" });
  const dots = SERIES.map(([, colour]) => svgAdd(svg, "circle", { r: 3.5, fill: colour, visibility: "hidden" }));
  const overlay = svgAdd(svg, "rect", { x: L, y: T, width: W - L - R, height: H - T - B,
                                         fill: "transparent", class: "overlay" });
  const tip = document.getElementById("chart-tip");
  const hide = () => {
    tip.hidden = true;
    guide.setAttribute("visibility", "hidden");
    dots.forEach((d) => d.setAttribute("visibility", "hidden"));
  };
  overlay.addEventListener("mouseleave", hide);
  overlay.addEventListener("mousemove", (event) => {
    const box = svg.getBoundingClientRect();
    const sx = ((event.clientX - box.left) / box.width) * W;
    const t = t1 === t0 ? t0 : t0 + ((sx - L) / (W - L - R)) * (t1 - t0);
    const p = history[nearest(history, t)];
    guide.setAttribute("x1", x(p.clock));
    guide.setAttribute("x2", x(p.clock));
    guide.setAttribute("visibility", "visible");
    SERIES.forEach(([key], k) => {
      dots[k].setAttribute("cx", x(p.clock));
      dots[k].setAttribute("cy", y(p[key]));
      dots[k].setAttribute("visibility", "visible");
    });
    tip.textContent = `${formatClock(p.clock, 0)} · allocation ${(100 * p.allocation).toFixed(1)}% · ` +
      `fragmentation ${(100 * p.fragmentation).toFixed(1)}%`;
    tip.style.left = `${(x(p.clock) / W) * box.width}px`;
    tip.hidden = false;
  });
}

function renderChart(history) {
  const svg = document.getElementById("chart");
  const { W, H, L, R, T, B } = CHART;
  svg.replaceChildren();
  const t0 = history.length ? history[0].clock : 0;
  const t1 = history.length ? history[history.length - 1].clock : 1;
  const x = (t) => (t1 === t0 ? (L + W - R) / 2 : L + ((t - t0) / (t1 - t0)) * (W - L - R));
  const y = (v) => H - B - v * (H - B - T);
  drawAxes(svg, x, y, t0, t1 === t0 ? t0 + 1 : t1);
  if (!history.length) return;
  for (const [key, stroke, dash] of SERIES) {
    const points = history.map((p) => `${x(p.clock).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
    svgAdd(svg, "polyline", { points, fill: "none", stroke, "stroke-width": 2,
                              "stroke-dasharray": dash, "data-series": key });
  }
  const last = history[history.length - 1];
  const legend = document.getElementById("chart-legend");
  legend.replaceChildren();
  for (const [key, colour, dash] of SERIES) {
    const item = document.createElement("span");
    item.className = "series" + (dash ? " dashed" : "");
    item.style.setProperty("--c", colour);
    item.textContent = `${key} ${(100 * last[key]).toFixed(1)}%`;
    legend.append(item);
  }
  drawHover(svg, history, x, y, t0, t1);
}
