// The conflict review queue on the Sleep tab: the pending count as a badge on the tab, the pairs
// sleep parked for a person (both memories as they are now), and the resolutions (keep one side,
// merge with new text, dismiss), each answered with its receipt. Only the REST API.

import { chip, clear, el, empty, guarded, showBanner, when } from "./ui.js";

const RESOLVER = "studio";

// The count on the Sleep tab; hidden at 0 or without an owner. Never raises: only a hint.
export async function refreshBadge(studio) {
  const badge = document.getElementById("conflicts-badge");
  if (!badge) return;
  let pending = 0;
  if (studio.api && studio.owner) {
    try {
      pending = (await studio.api.call("conflicts", { query: studio.api.ownerQuery({ limit: 1 }) })).pending || 0;
    } catch {
      pending = 0;
    }
  }
  badge.textContent = String(pending);
  badge.hidden = pending === 0;
  badge.setAttribute("aria-label", `${pending} conflicts to review`);
}

export function receiptText(r) {
  const base = `${r.action} by ${r.resolved_by} at ${when(r.resolved_at)}`;
  return r.kept ? `${base}: kept ${r.kept.slice(0, 8)}, archived ${r.archived.slice(0, 8)}` : `${base}: both memories kept`;
}

export function create(section, studio) {
  const list = el("div", { id: "conflict-list", class: "mem-list" });
  const receipt = el("p", { id: "conflict-receipt", class: "receipt", role: "status", "aria-live": "polite", hidden: true });
  const count = el("span", { id: "conflict-count", class: "muted" });
  section.append(el("div", { class: "row" }, el("h2", { text: "Conflicts to review" }), count), receipt, list);

  async function resolve(item, body, button) {
    const res = await guarded(studio, () =>
      studio.api.call("conflictResolve", { id: item.id, body: studio.api.ownerBody({ resolved_by: RESOLVER, ...body }) }), { button });
    if (!res) return;
    receipt.textContent = `Resolved: ${receiptText(res.receipt)}.`;
    receipt.hidden = false;
    showBanner("Conflict resolved.", "info");
    await load();
  }

  function side(item, label, mem, other) {
    const keep = el("button", { type: "button", class: "ghost", text: `Keep ${label}`, "aria-label": `Keep ${label}: ${mem.content}` });
    keep.disabled = other.scope === "global"; // a global memory is never archived by a resolution
    keep.addEventListener("click", () => resolve(item, { action: "accept", keep: mem.id }, keep));
    return el(
      "div",
      { class: "conflict-side", "data-memory": mem.id },
      el("p", { class: "mem-content" }, el("strong", { text: `${label} ` }), mem.content),
      el("div", { class: "mem-meta" }, mem.scope === "global" ? chip("global", "warn") : null,
        mem.state !== "active" ? chip(mem.state, "muted") : null, el("span", { class: "muted", text: `updated ${when(mem.updated_at)}` })),
      el("div", { class: "row" }, keep),
    );
  }

  function card(item) {
    const text = el("textarea", { rows: 2, "aria-label": "Merged text", text: item.b.content });
    const into = el("select", { "aria-label": "Merge into" },
      [["a", item.a], ["b", item.b]].map(([k, m]) => el("option", { value: m.id, text: `into ${k.toUpperCase()}` })));
    const merge = el("button", { type: "button", text: "Merge" });
    merge.disabled = item.a.scope === "global" || item.b.scope === "global";
    merge.addEventListener("click", () => resolve(item, { action: "merge", keep: into.value, content: text.value }, merge));
    const dismiss = el("button", { type: "button", class: "ghost", text: "Dismiss" });
    dismiss.addEventListener("click", () => resolve(item, { action: "dismiss" }, dismiss));
    return el(
      "article",
      { class: "mem conflict", "data-conflict": item.id },
      el("p", { class: "muted", text: `${item.reason} · parked ${when(item.created_at)}` }),
      el("div", { class: "grid2" }, side(item, "A", item.a, item.b), side(item, "B", item.b, item.a)),
      el("div", { class: "row" }, text, into, merge, dismiss),
    );
  }

  async function load() {
    if (!studio.owner) {
      clear(count);
      return clear(list, empty("Pick an owner above to see its conflicts."));
    }
    const res = await guarded(studio, () => studio.api.call("conflicts", { query: studio.api.ownerQuery({ limit: 50 }) }));
    if (!res) return;
    count.textContent = `${res.pending} pending`;
    clear(list, (res.items || []).length ? res.items.map(card) : empty("Nothing to review: sleep parks pairs here when a global memory is involved or in freeze mode."));
    await refreshBadge(studio);
  }

  return { load };
}
