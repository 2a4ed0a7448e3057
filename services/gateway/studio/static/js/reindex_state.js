// The reindex in progress, as the Engine tab shows it: while an embedding-signature change runs,
// engine.status gives each vector store a `reindex` entry (from, to, done, total, searching:
// old | none | unknown, detail). `reindexNotes` turns them into what to say (pure, no DOM);
// `renderReindexState` fills the prominent card, and hides it when no change is in progress.

import { clear, el } from "./ui.js";

const SERVING = {
  old: (r) => ({ level: "info", text: `Search uses the old vectors (${r.from}) until the reindex completes.` }),
  none: (r) => (r.from
    ? { level: "degraded", text: "Degraded: keyword-only search. The old vectors cannot be searched with this model's query vectors, so full-text search serves until the reindex completes." }
    : { level: "info", text: "This store is being filled: it is searched once the reindex completes." }),
  unknown: () => ({ level: "degraded", text: "Degraded: the embed service did not answer, so no vectors are searched now; full-text search serves." }),
};

export function reindexNotes(stores) {
  return Object.entries(stores || {})
    .filter(([, s]) => s && s.reindex)
    .map(([store, s]) => {
      const r = s.reindex;
      const done = Number(r.done) || 0;
      const total = Number(r.total) || 0;
      const serving = (SERVING[r.searching] || SERVING.unknown)(r);
      return {
        store,
        to: r.to,
        done,
        total,
        percent: total ? Math.floor((100 * Math.min(done, total)) / total) : 0,
        progress: `${done} of ${total} memories embedded with ${r.to}`,
        ...serving,
        detail: r.detail || "",
      };
    });
}

export function renderReindexState(card, stores) {
  const notes = reindexNotes(stores);
  const key = JSON.stringify(notes);
  if (card.dataset.key === key) return; // unchanged: a live region is not re-announced
  card.dataset.key = key;
  card.hidden = notes.length === 0;
  card.dataset.level = notes.some((n) => n.level === "degraded") ? "degraded" : "info";
  clear(card, notes.length ? el("h3", { text: "Reindex in progress" }) : null, notes.map((n) =>
    el("div", { class: "reindex-store", "data-store": n.store, "data-level": n.level },
      el("p", { class: "reindex-progress-text" }, el("b", { text: `Store ${n.store}: ` }), n.progress, ` (${n.percent} %)`),
      el("progress", { max: Math.max(n.total, 1), value: n.done, "aria-label": `Reindex of store ${n.store}` }),
      el("p", { class: "reindex-serving", text: n.text }),
      n.detail ? el("p", { class: "muted reindex-detail", text: n.detail }) : null)));
}
