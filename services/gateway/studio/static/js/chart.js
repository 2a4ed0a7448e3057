// A small SVG line chart (no library): a few series over time, a legend, and the same data
// as a table for screen readers.

import { el } from "./ui.js";

const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#2563eb", "#d97706", "#059669", "#db2777"];

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// series: [{name, points: [{t: Date, v: number}]}]
export function lineChart(title, series, { unit = "", width = 560, height = 180 } = {}) {
  const pad = { l: 44, r: 8, t: 10, b: 22 };
  const all = series.flatMap((s) => s.points);
  const t0 = Math.min(...all.map((p) => +p.t));
  const t1 = Math.max(...all.map((p) => +p.t), t0 + 1);
  const vmax = Math.max(1, ...all.map((p) => p.v));
  const x = (t) => pad.l + ((+t - t0) / (t1 - t0)) * (width - pad.l - pad.r);
  const y = (v) => height - pad.b - (v / vmax) * (height - pad.t - pad.b);
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart", "aria-label": title, preserveAspectRatio: "none" });
  root.append(svg("title", {}, title));
  for (const f of [0, 0.5, 1]) {
    const yy = y(vmax * f);
    root.append(svg("line", { x1: pad.l, x2: width - pad.r, y1: yy, y2: yy, class: "grid" }));
    root.append(svg("text", { x: pad.l - 6, y: yy + 4, "text-anchor": "end", class: "axis" }, `${+(vmax * f).toFixed(1)}${unit}`));
  }
  if (all.length) {
    root.append(svg("text", { x: pad.l, y: height - 4, class: "axis" }, new Date(t0).toLocaleTimeString()));
    root.append(svg("text", { x: width - pad.r, y: height - 4, "text-anchor": "end", class: "axis" }, new Date(t1).toLocaleTimeString()));
  }
  series.forEach((s, i) => {
    const pts = s.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(" ");
    if (s.points.length === 1) {
      root.append(svg("circle", { cx: x(s.points[0].t), cy: y(s.points[0].v), r: 3, fill: COLORS[i % COLORS.length] }));
    } else if (pts) {
      const dash = i % 2 ? { "stroke-dasharray": "6 4" } : {}; // overlapping series stay apart
      root.append(svg("polyline", { points: pts, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 2, ...dash }));
    }
  });
  const legend = el("ul", { class: "legend" }, series.map((s, i) => {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = COLORS[i % COLORS.length];
    const last = s.points.length ? s.points[s.points.length - 1].v : 0;
    return el("li", {}, swatch, `${s.name}: ${+last.toFixed(2)}${unit}`);
  }));
  const table = el("table", { class: "sr-only" }, el("caption", { text: title }),
    el("tr", {}, el("th", { text: "time" }), series.map((s) => el("th", { text: s.name }))),
    (series[0]?.points || []).map((p, j) => el("tr", {}, el("td", { text: new Date(p.t).toLocaleTimeString() }),
      series.map((s) => el("td", { text: String(s.points[j]?.v ?? "") })))));
  return el("figure", { class: "chart-box" }, root, el("figcaption", {}, el("strong", { text: title }), legend), table);
}
