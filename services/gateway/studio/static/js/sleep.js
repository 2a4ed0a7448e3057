// Sleep tab: the conflicts parked for review (conflicts.js), the owner's consolidation runs
// (status, phases, counters, receipt, tokens), "run now" watched to its end, and the ledgers of
// what consolidation changed (merges, archives, patterns with their evidence), each linked to its memory.

import * as review from "./conflicts.js";
import { chip, clear, el, empty, guarded, showBanner, sleep, when } from "./ui.js";

const FINAL = new Set(["ok", "noop", "degraded", "refreshed", "aborted", "failed"]);
const PHASES = ["conflict_resolution", "archival_demotion", "pattern_discovery", "relation_completion", "affective_attribution"];
const TONE = { ok: "ok", refreshed: "ok", noop: "muted", degraded: "warn", aborted: "warn", failed: "bad" };

const memoryLink = (id, text) => el("a", { href: `#/memories/${encodeURIComponent(id)}`, text: text || id });

export function create(panel, studio) {
  const head = el("div", { class: "row" });
  const watch = el("div", { id: "sleep-watch", role: "status", "aria-live": "polite" });
  const runs = el("div", { id: "sleep-runs" });
  const ledgers = el("div", { id: "sleep-ledgers", class: "grid3" });
  const conflicts = el("section", { id: "sleep-conflicts" });
  const queue = review.create(conflicts, studio);
  panel.append(conflicts, el("h2", { text: "Sleep runs" }), head, watch, runs, el("h2", { text: "What consolidation changed" }), ledgers);
  let alive = false;

  const trigger = el("button", { type: "button", id: "sleep-run", text: "Run sleep now" });
  trigger.addEventListener("click", () => guarded(studio, runNow, { button: trigger }));
  const hint = el("span", { class: "muted" });
  head.append(trigger, hint);

  async function runNow() {
    if (!studio.owner) return showBanner("Pick an owner first.");
    const started = await studio.api.call("sleepRun", { body: studio.api.ownerBody({ wait: false }) });
    const runId = started.run_id;
    const deadline = Date.now() + 120_000;
    clear(watch, el("p", {}, "Run ", el("code", { text: runId }), " queued…"));
    while (alive && Date.now() < deadline) {
      const run = await findRun(runId);
      if (run) {
        clear(watch, el("p", {}, "Run ", el("code", { text: runId }), " ", chip(run.status, TONE[run.status] || "muted")));
        if (FINAL.has(run.status)) {
          clear(watch, el("p", {}, "Run finished ", chip(run.status, TONE[run.status] || "muted"), " · receipt ",
            el("code", { class: "receipt-text", text: run.receipt || "—" })));
          await Promise.all([loadRuns(runId), loadLedgers(), queue.load()]);
          return;
        }
      }
      await sleep(600);
    }
    if (alive) showBanner("The sleep run did not finish within 2 minutes; it goes on in the background.");
  }

  async function findRun(runId) {
    const res = await studio.api.call("sleepStatus", { query: studio.api.ownerQuery({ limit: 20 }) });
    return (res.runs || []).find((r) => r.run_id === runId) || null;
  }

  function runCard(run, open = false) {
    const order = (name) => (PHASES.includes(name) ? PHASES.indexOf(name) : PHASES.length);
    const phases = Object.entries(run.phases || {}).sort(([a], [b]) => order(a) - order(b));
    const c = run.counters || {};
    const tokens = (c.llmPromptTokens || 0) + (c.llmCompletionTokens || 0);
    return el(
      "details",
      { class: "run card", "data-run": run.run_id, open },
      el("summary", {}, chip(run.status, TONE[run.status] || "muted"), ` ${when(run.started_at)} · ${phases.length} phases · ${tokens} LLM tokens`),
      run.receipt ? el("p", {}, "Receipt ", el("code", { class: "receipt-text", text: run.receipt })) : el("p", { class: "muted", text: "No receipt yet." }),
      el("p", { class: "muted", text: `Run ${run.run_id} · finished ${when(run.finished_at)}` }),
      phases.length
        ? el("div", { class: "scroll" }, el("table", { class: "phases" },
          el("thead", {}, el("tr", {}, ["Phase", "Status", "Counters"].map((h) => el("th", { scope: "col", text: h })))),
          el("tbody", {}, phases.map(([name, p]) => el("tr", {},
            el("td", { text: name }),
            el("td", {}, chip(p.status || "—", TONE[p.status] || "muted"), p.reason ? ` ${p.reason}` : ""),
            el("td", { class: "counters", text: Object.entries(p).filter(([k, v]) => typeof v === "number" && v).map(([k, v]) => `${k} ${v}`).join(" · ") || "—" }))))))
        : null,
    );
  }

  async function loadRuns(openRun = null) {
    if (!studio.owner) return clear(runs, empty("Pick an owner above to see its sleep runs."));
    const res = await guarded(studio, () => studio.api.call("sleepStatus", { query: studio.api.ownerQuery({ limit: 20 }) }));
    if (!res) return;
    clear(runs, (res.runs || []).length ? res.runs.map((r) => runCard(r, r.run_id === openRun)) : empty("No sleep run yet. Runs start when the owner is idle, or with “Run sleep now”."));
  }

  async function loadLedgers() {
    if (!studio.owner) return clear(ledgers);
    const list = (query) => studio.api.call("list", { query: studio.api.ownerQuery({ limit: 100, ...query }) }).then((r) => r.memories || []);
    const got = await guarded(studio, () => Promise.all([list({ state: "archived" }), list({ memory_type: "pattern" }), list({ state: "active" })]));
    if (!got) return;
    const [archived, patterns, active] = got;
    const merges = active.filter((m) => m.metadata && m.metadata.mergedFrom);
    const archives = archived.filter((m) => m.metadata && (m.metadata.archivedByRun || m.metadata.supersededBy || m.metadata.mergedInto));
    const section = (title, id, items, render, none) =>
      el("section", { class: "card", id }, el("h3", { text: title }), items.length ? el("ul", { class: "ledger" }, items.map(render)) : empty(none));
    clear(
      ledgers,
      section("Merges", "ledger-merges", merges, (m) =>
        el("li", {}, memoryLink(m.id, m.content), el("span", { class: "muted" }, " merged from ", memoryLink(m.metadata.mergedFrom, m.metadata.mergedFrom.slice(0, 8)))), "No merge yet."),
      section("Archives", "ledger-archives", archives, (m) =>
        el("li", {}, memoryLink(m.id, m.content),
          el("span", { class: "muted" }, m.metadata.mergedInto ? [" merged into ", memoryLink(m.metadata.mergedInto, m.metadata.mergedInto.slice(0, 8))]
            : m.metadata.supersededBy ? [" superseded by ", memoryLink(m.metadata.supersededBy, m.metadata.supersededBy.slice(0, 8))] : " archived as a duplicate or stale")), "Nothing archived by consolidation."),
      section("Patterns", "ledger-patterns", patterns, (m) =>
        el("li", {}, memoryLink(m.id, (m.metadata && m.metadata.title) || m.content),
          el("span", { class: "muted" }, " evidence: "),
          ((m.metadata && m.metadata.evidence) || []).map((id, i) => [i ? ", " : "", memoryLink(id, id.slice(0, 8))])), "No pattern discovered yet."),
    );
  }

  return {
    show() {
      alive = true;
      trigger.hidden = !studio.isOperator;
      hint.textContent = studio.isOperator
        ? "Consolidates this owner's memory now; a run is aborted when new activity arrives."
        : "Runs start when this owner is idle; an operator key can start one now.";
      queue.load();
      loadRuns();
      loadLedgers();
    },
    hide() {
      alive = false;
    },
  };
}
