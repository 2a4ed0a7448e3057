// Graph tab: the owner's entity graph that consolidation builds (GET /v1/entities and
// /v1/relations), drawn in SVG by a small deterministic force layout (a circle to start,
// then springs and repulsion), edges labelled by relation, affective edges by emotion and
// kind. Clicking an entity focuses on it and its neighbours (#/graph/<id>); the same edges
// are listed in a table below.

import { chip, clear, el, empty, guarded } from "./ui.js";

const NS = "http://www.w3.org/2000/svg";
const MAX_ENTITIES = 150;
const MAX_RELATIONS = 400;
const SIZE = { w: 880, h: 560 };
const KIND_TONE = { person: "ok", thing: "muted" };

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

export function edgeLabel(r) {
  if (r.relation !== "affective_context") return r.relation.replace(/_/g, " ");
  return [r.emotion || "emotion", r.affect].filter(Boolean).join(" · ");
}

// Positions for the nodes: evenly on a circle, then a fixed number of force steps (springs on
// edges, repulsion between all pairs, a pull to the centre), so the same graph is always drawn
// the same way. Returns {id: {x, y}} inside w x h with a margin for the labels.
export function layout(nodes, edges, { w = SIZE.w, h = SIZE.h, steps = 200 } = {}) {
  const n = nodes.length;
  const index = new Map(nodes.map((node, i) => [node.id, i]));
  const x = new Float64Array(n), y = new Float64Array(n);
  const r0 = Math.min(w, h) * 0.38;
  for (let i = 0; i < n; i++) {
    const a = (2 * Math.PI * i) / Math.max(1, n) - Math.PI / 2;
    x[i] = w / 2 + r0 * Math.cos(a);
    y[i] = h / 2 + r0 * Math.sin(a);
  }
  const links = edges
    .map((e) => [index.get(e.source_id), index.get(e.target_id)])
    .filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
  const k = Math.max(60, Math.min(150, Math.sqrt((w * h) / Math.max(n, 1)) * 0.55));
  const fx = new Float64Array(n), fy = new Float64Array(n);
  for (let step = 0; n > 2 && step < steps; step++) {
    fx.fill(0);
    fy.fill(0);
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const dx = x[i] - x[j], dy = y[i] - y[j];
        const push = (k * k) / Math.max(dx * dx + dy * dy, 25);
        fx[i] += dx * push; fy[i] += dy * push;
        fx[j] -= dx * push; fy[j] -= dy * push;
      }
    }
    for (const [a, b] of links) {
      const dx = x[b] - x[a], dy = y[b] - y[a];
      const pull = Math.hypot(dx, dy) / k / 2;
      fx[a] += dx * pull; fy[a] += dy * pull;
      fx[b] -= dx * pull; fy[b] -= dy * pull;
    }
    const max = 14 * (1 - step / steps) + 0.5;
    for (let i = 0; i < n; i++) {
      fx[i] += (w / 2 - x[i]) * 0.05;
      fy[i] += (h / 2 - y[i]) * 0.05;
      const len = Math.hypot(fx[i], fy[i]);
      const scale = len > max ? max / len : 1;
      x[i] += fx[i] * scale;
      y[i] += fy[i] * scale;
    }
  }
  // fit the drawing into the box (margins for the labels)
  const fit = (v, lo, hi) => {
    const min = Math.min(...v), span = Math.max(...v) - min;
    return (t) => (span < 1 ? (lo + hi) / 2 : lo + ((t - min) / span) * (hi - lo));
  };
  const fitX = fit(x, 70, w - 70), fitY = fit(y, 30, h - 40);
  return Object.fromEntries(nodes.map((node, i) => [node.id, { x: fitX(x[i]), y: fitY(y[i]) }]));
}

function drawGraph(entities, relations, focus, onPick) {
  const pos = layout(entities, relations);
  const root = svg("svg", { viewBox: `0 0 ${SIZE.w} ${SIZE.h}`, role: "img", class: "graph", id: "graph-svg",
    "aria-label": `Entity graph: ${entities.length} entities, ${relations.length} relations` });
  root.append(svg("title", {}, `Entity graph: ${entities.length} entities, ${relations.length} relations`));
  const defs = svg("defs");
  for (const [id, cls] of [["arrow", "edge-head"], ["arrow-affect", "edge-head affect"]]) {
    defs.append(svg("marker", { id, viewBox: "0 0 10 10", refX: 22, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: cls })));
  }
  root.append(defs);
  const edgeLayer = svg("g", { class: "edges" });
  const labelLayer = svg("g", { class: "edge-labels" });
  const seen = {};
  for (const r of relations) {
    const a = pos[r.source_id], b = pos[r.target_id];
    if (!a || !b) continue;
    const affect = r.relation === "affective_context";
    const pair = [r.source_id, r.target_id].sort().join();
    const nth = (seen[pair] = (seen[pair] || 0) + 1) - 1; // parallel edges: labels stacked apart
    const attrs = { class: `edge${affect ? " affect" : ""}`, "data-relation": r.relation, "marker-end": `url(#${affect ? "arrow-affect" : "arrow"})` };
    if (a === b) {
      edgeLayer.append(svg("path", { ...attrs, d: `M ${a.x} ${a.y - 12} c 30 -40 60 -10 12 12`, fill: "none" }));
    } else {
      edgeLayer.append(svg("line", { ...attrs, x1: a.x, y1: a.y, x2: b.x, y2: b.y }));
    }
    const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2 - 4 + nth * 13 - (a === b ? 34 : 0);
    labelLayer.append(svg("text", { x: mx, y: my, "text-anchor": "middle", class: `edge-label${affect ? " affect" : ""}` }, edgeLabel(r)));
  }
  const nodeLayer = svg("g", { class: "nodes" });
  for (const e of entities) {
    const p = pos[e.id];
    const radius = Math.min(16, 7 + Math.sqrt(e.mentions || 1) * 2);
    const g = svg("g", { class: `node kind-${(e.kind || "thing").replace(/[^a-z0-9_-]/gi, "")}${e.id === focus ? " focus" : ""}`,
      "data-entity": e.id, tabindex: 0, role: "button", "aria-label": `${e.name} (${e.kind}), ${e.degree || 0} relations: show its neighbours` },
    svg("title", {}, `${e.name} · ${e.kind} · ${e.mentions} mentions · ${e.degree || 0} relations`),
    svg("circle", { cx: p.x, cy: p.y, r: radius }),
    svg("text", { x: p.x, y: p.y + radius + 13, "text-anchor": "middle", class: "node-label" }, e.name));
    g.addEventListener("click", () => onPick(e.id));
    g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onPick(e.id); } });
    nodeLayer.append(g);
  }
  root.append(edgeLayer, labelLayer, nodeLayer);
  return root;
}

function edgeTable(relations) {
  return el("div", { class: "scroll" }, el("table", { class: "phases", id: "graph-edges" },
    el("caption", { class: "muted", text: "Relations, newest first" }),
    el("thead", {}, el("tr", {}, ["Source", "Relation", "Target", "Evidence"].map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, relations.map((r) => el("tr", { "data-relation": r.relation },
      el("td", { text: r.source_name }),
      el("td", {}, r.relation === "affective_context" ? chip(edgeLabel(r), r.affect === "trait" ? "warn" : "") : r.relation),
      el("td", { text: r.target_name }),
      el("td", { text: r.evidence && r.evidence.length ? `${r.evidence.length} ${r.evidence.length === 1 ? "memory" : "memories"}` : r.weight ? `co-occurs ${r.weight}×` : "—" }))))));
}

export function create(panel, studio) {
  const search = el("input", { id: "graph-q", name: "q", type: "search", placeholder: "entity name contains…", autocomplete: "off" });
  const allButton = el("button", { type: "button", class: "ghost", id: "graph-all", text: "Whole graph" });
  const summary = el("p", { class: "muted", id: "graph-summary", role: "status", "aria-live": "polite" });
  const canvas = el("div", { id: "graph-canvas", class: "card graph-box" });
  const list = el("div", { id: "graph-list" });
  panel.append(
    el("h2", { text: "Entity graph" }),
    el("p", { class: "muted", text: "Entities named in this owner's memory and the relations consolidation found between them. Emotion edges (affective context) are dashed. Click an entity to see its neighbours." }),
    el("div", { class: "row" }, el("label", { class: "grow" }, el("span", { text: "Find an entity" }), search), allButton),
    summary, canvas, list,
  );
  let focus = null;
  let seq = 0;

  async function load() {
    if (!studio.owner) {
      summary.textContent = "";
      clear(list);
      return clear(canvas, empty("Pick an owner above to see its entity graph."));
    }
    const mine = ++seq;
    const q = search.value.trim() || undefined;
    const got = await guarded(studio, () => Promise.all([
      studio.api.call("entities", { query: studio.api.ownerQuery({ entity_id: focus || undefined, q, limit: MAX_ENTITIES }) }),
      studio.api.call("relations", { query: studio.api.ownerQuery({ entity_id: focus || undefined, limit: MAX_RELATIONS }) }),
    ]));
    if (!got || mine !== seq) return;
    const [ents, rels] = got;
    const entities = ents.entities || [];
    const ids = new Set(entities.map((e) => e.id));
    const relations = (rels.relations || []).filter((r) => ids.has(r.source_id) && ids.has(r.target_id));
    const affective = relations.filter((r) => r.relation === "affective_context").length;
    const focused = focus ? entities.find((e) => e.id === focus) : null;
    summary.textContent = `${focused ? `Around ${focused.name}: ` : ""}${entities.length} of ${ents.total} entities, ` +
      `${relations.length} relations (${affective} affective)` +
      (ents.total > entities.length || rels.total > (rels.relations || []).length ? " — the most mentioned are shown." : ".");
    allButton.hidden = !focus && !q;
    if (!entities.length) {
      clear(list);
      return clear(canvas, empty(q || focus ? "No entity matches." : "No entities yet: they appear as memories name people and things, and sleep runs relate them."));
    }
    clear(canvas, drawGraph(entities, relations, focus, (id) => studio.go(`graph/${encodeURIComponent(id)}`)));
    clear(list, relations.length ? edgeTable(relations) : empty("No relations between these entities yet."));
  }

  let typing = null;
  search.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(load, 300); });
  allButton.addEventListener("click", () => { search.value = ""; studio.go("graph"); });

  return {
    show(params) {
      focus = params && params.id ? params.id : null;
      load();
    },
  };
}
