// Memories tab: stats cards, live search and filters (type, session, agent, state, source), pagination, add, inline edit, delete
// with its receipt, restore, one memory by URL (#/memories/<id>), and the import/export tools.

import { chip, clear, confirmDialog, debounce, el, empty, guarded, showBanner, when } from "./ui.js";
import { ioTools } from "./memories_io.js";

export const TYPES = ["factual", "episodic", "procedural", "semantic", "pattern", "summary"];
export const STATES = ["active", "summary", "archived"];
export const SOURCES = ["chat_turn", "rule", "llm", "api", "sleep", "import"];
const PAGE = 20;

function select(name, label, values, anyLabel) {
  const id = `mem-${name}`;
  return el(
    "label",
    { for: id },
    el("span", { text: label }),
    el("select", { id, name }, anyLabel ? el("option", { value: "", text: anyLabel }) : null,
      values.map((v) => el("option", { value: v, text: v }))),
  );
}

function input(name, label, attrs = {}) {
  const id = attrs.id || `mem-${name}`;
  return el("label", { for: id }, el("span", { text: label }), el("input", { id, name, ...attrs }));
}

export function receiptText(removed) {
  const r = removed || {};
  return `row ${r.rows ?? 0}, pgvector vectors ${r.pgvector_vectors ?? 0}, Qdrant points ${r.qdrant_points ?? 0}, history rows ${r.history_rows ?? 0}`;
}

export function create(panel, studio) {
  const state = { offset: 0, filters: {}, detail: null, pageSeq: 0 };
  const stats = el("div", { class: "cards", id: "mem-stats", "aria-live": "polite" });
  const filters = el(
    "form",
    { class: "filters", id: "mem-filters", role: "search", onsubmit: (ev) => ev.preventDefault() },
    input("q", "Search", { type: "search", placeholder: "words in the memory", autocomplete: "off" }),
    select("memory_type", "Type", TYPES, "any type"),
    input("session_id", "Session", { placeholder: "any session", autocomplete: "off" }),
    input("agent_id", "Agent", { placeholder: "any agent", autocomplete: "off" }),
    select("state", "State", STATES, "any state"),
    select("source", "Source", SOURCES, "any source"),
  );
  const list = el("div", { id: "mem-list", class: "mem-list", "aria-live": "polite" });
  const pager = el("nav", { class: "pager", "aria-label": "Pages of memories" });
  const receipt = el("div", { id: "mem-receipt", class: "receipt", role: "status", hidden: true });
  const detail = el("div", { id: "mem-detail" });
  const addForm = buildAddForm();
  const io = ioTools(studio, () => refresh());
  const browse = el(
    "div",
    { id: "mem-browse" },
    el("h2", { class: "sr-only", text: "Memories" }),
    stats,
    filters,
    receipt,
    list,
    pager,
    el("div", { class: "grid2" }, addForm, io.node),
  );
  panel.append(detail, browse);

  // A text field also fires "change" when it loses focus (e.g. on a click on Edit): only a
  // real change of the filters reloads the list, so an edit in progress is not wiped.
  const search = debounce(() => {
    if (JSON.stringify(currentFilters()) === JSON.stringify(state.filters)) return;
    state.offset = 0;
    refresh();
  }, 250);
  filters.addEventListener("input", search);
  filters.addEventListener("change", search);

  function currentFilters() {
    const f = Object.fromEntries(new FormData(filters).entries());
    for (const k of Object.keys(f)) if (!f[k]) delete f[k];
    return f;
  }

  async function refresh() {
    if (!studio.owner) {
      clear(stats);
      clear(list, empty("Pick an owner above to see its memories."));
      clear(pager);
      return;
    }
    state.filters = currentFilters();
    await Promise.all([loadStats(), loadPage()]);
  }

  async function loadStats() {
    await guarded(studio, async () => {
      const s = await studio.api.call("stats", { query: studio.api.ownerQuery() });
      const card = (label, value, id) =>
        el("div", { class: "stat", id }, el("span", { class: "stat-label", text: label }), el("span", { class: "stat-value", text: value }));
      const parts = (obj) => Object.entries(obj || {}).filter(([, n]) => n).map(([k, n]) => `${k} ${n}`).join(" · ") || "—";
      clear(
        stats,
        card("Memories", String(s.total ?? 0), "stat-total"),
        card("Tokens", String(s.tokens ?? 0), "stat-tokens"),
        card("By type", parts(s.by_type), "stat-types"),
        card("By state", parts(s.by_state), "stat-states"),
        card("Last activity", when(s.last_activity), "stat-last"),
      );
    });
  }

  async function loadPage() {
    const query = studio.api.ownerQuery({ ...state.filters, limit: PAGE, offset: state.offset });
    const seq = ++state.pageSeq;
    const page = await guarded(studio, () => studio.api.call("list", { query }));
    if (!page || seq !== state.pageSeq) return; // a newer request owns the list
    const rows = page.memories || [];
    if (!rows.length) {
      const anyFilter = Object.keys(state.filters).length > 0;
      clear(list, empty(anyFilter ? "No memory matches these filters." : "No memories yet. Add one below, import a file, or send chat traffic."));
    } else {
      clear(list, rows.map(row));
    }
    const total = page.total ?? rows.length;
    const first = total ? state.offset + 1 : 0;
    const last = Math.min(state.offset + PAGE, total);
    clear(
      pager,
      el("button", { type: "button", class: "ghost", disabled: state.offset === 0, text: "← Previous",
        onclick: () => { state.offset = Math.max(0, state.offset - PAGE); loadPage(); } }),
      el("span", { id: "mem-range", text: `${first}–${last} of ${total}` }),
      el("button", { type: "button", class: "ghost", disabled: last >= total, text: "Next →",
        onclick: () => { state.offset += PAGE; loadPage(); } }),
    );
  }

  function row(m) {
    const item = el("article", { class: "mem", "data-id": m.id, "aria-label": `Memory ${m.key || m.id}` });
    const view = () =>
      clear(
        item,
        el("p", { class: "mem-content", text: m.content }),
        el("div", { class: "mem-meta" },
          chip(m.memory_type), chip(m.state, m.state === "active" ? "ok" : "warn"), chip(m.source, "muted"),
          m.session_id ? chip(`session ${m.session_id}`, "muted") : null,
          m.agent_id ? chip(`agent ${m.agent_id}`, "muted") : null,
          m.key ? el("code", { class: "mem-key", text: m.key }) : null,
          el("span", { class: "muted", text: `updated ${when(m.updated_at)}` })),
        el("div", { class: "row" },
          el("a", { href: `#/memories/${encodeURIComponent(m.id)}`, class: "button ghost", text: "Open", "aria-label": `Open memory ${m.key || m.id}` }),
          el("button", { type: "button", class: "ghost", text: "Edit", onclick: () => edit() }),
          m.state !== "active"
            ? el("button", { type: "button", class: "ghost", text: "Restore", onclick: (ev) => restore(m, ev.target) })
            : null,
          el("button", { type: "button", class: "danger ghost", text: "Delete", onclick: () => remove(m) })),
      );
    const edit = () => {
      const form = el(
        "form",
        { class: "edit", "aria-label": "Edit memory" },
        el("label", { for: `edit-${m.id}` }, el("span", { text: "Content" }),
          el("textarea", { id: `edit-${m.id}`, name: "content", rows: 3, text: m.content })),
        el("label", { for: `edit-type-${m.id}` }, el("span", { text: "Type" }),
          el("select", { id: `edit-type-${m.id}`, name: "memory_type" },
            TYPES.map((t) => el("option", { value: t, text: t, selected: t === m.memory_type })))),
        el("div", { class: "row" },
          el("button", { type: "submit", text: "Save" }),
          el("button", { type: "button", class: "ghost", text: "Cancel", onclick: view })),
      );
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const data = Object.fromEntries(new FormData(form).entries());
        const done = await guarded(
          studio,
          () => studio.api.call("update", { id: m.id, body: studio.api.ownerBody(data) }),
          { form, button: form.querySelector("[type=submit]") },
        );
        if (done) {
          m = done.memory;
          view();
          showBanner(done.reembed ? "Saved; the memory is being re-embedded." : "Saved.", "info");
        }
      });
      clear(item, form);
      form.querySelector("textarea").focus();
    };
    view();
    return item;
  }

  async function remove(m) {
    const ok = await confirmDialog("Delete this memory?", `“${m.content.slice(0, 120)}” is removed from every store. This cannot be undone.`, "Delete");
    if (!ok) return;
    const done = await guarded(studio, () => studio.api.call("remove", { id: m.id, query: studio.api.ownerQuery() }));
    if (!done) return;
    receipt.hidden = false;
    clear(receipt, el("strong", { text: "Deleted. " }), `Removed from: ${receiptText(done.removed)}.`);
    if (state.detail) studio.go("memories");
    else refresh();
  }

  async function restore(m, button) {
    const done = await guarded(studio, () => studio.api.call("restore", { id: m.id, body: studio.api.ownerBody() }), { button });
    if (!done) return;
    showBanner("Restored: the memory is active again, with its original text.", "info");
    if (state.detail) showDetail(m.id);
    else refresh();
  }

  function buildAddForm() {
    const form = el(
      "form",
      { class: "card", id: "mem-add", "aria-labelledby": "mem-add-title", novalidate: true },
      el("h3", { id: "mem-add-title", text: "Add a memory" }),
      el("label", { for: "add-content" }, el("span", { text: "Content" }),
        el("textarea", { id: "add-content", name: "content", rows: 3, required: true })),
      el("div", { class: "grid2" },
        input("key", "Key (optional)", { id: "add-key", autocomplete: "off" }),
        el("label", { for: "add-type" }, el("span", { text: "Type" }),
          el("select", { id: "add-type", name: "memory_type" }, TYPES.map((t) => el("option", { value: t, text: t })))),
        input("session_id", "Session (optional)", { id: "add-session", autocomplete: "off" }),
        input("agent_id", "Agent (optional)", { id: "add-agent", autocomplete: "off" }),
        input("expires_at", "Expires (optional)", { id: "add-expires", type: "datetime-local" })),
      el("button", { type: "submit", text: "Add memory" }),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (!studio.owner) return showBanner("Pick an owner first.");
      const data = Object.fromEntries(new FormData(form).entries());
      for (const k of Object.keys(data)) if (!data[k]) delete data[k];
      if (data.expires_at) data.expires_at = new Date(data.expires_at).toISOString();
      const done = await guarded(studio, () => studio.api.call("create", { body: studio.api.ownerBody(data) }), {
        form, button: form.querySelector("[type=submit]"),
      });
      if (!done) return;
      form.reset();
      showBanner(done.created ? "Memory added." : "A memory with this key existed: it was updated.", "info");
      refresh();
    });
    return form;
  }

  async function showDetail(id) {
    clear(detail, el("p", { class: "muted", text: "Loading…" }));
    let found = null;
    try {
      found = studio.owner ? await studio.api.call("get", { id, query: studio.api.ownerQuery() }) : null;
    } catch (error) {
      if (error.kind !== "notfound") studio.fail(error);
    }
    if (state.detail !== id) return; // navigated away meanwhile
    const back = el("a", { href: "#/memories", class: "button ghost", text: "← All memories" });
    if (!found) {
      clear(detail, el("div", { class: "card", id: "mem-missing" }, back,
        empty(`No memory ${id} for ${studio.owner ? `owner ${studio.owner}` : "this key"}.`)));
      return;
    }
    const m = found.memory;
    const fields = [
      ["Content", m.content], ["Type", m.memory_type], ["State", m.state], ["Source", m.source],
      ["Key", m.key], ["Session", m.session_id], ["Agent", m.agent_id],
      ["Created", when(m.created_at)], ["Updated", when(m.updated_at)],
      ["Last recalled", when(m.last_accessed_at)], ["Expires", when(m.expires_at)], ["Original text", m.full_content],
      ["Embedding", m.embedding_signature], ["Metadata", JSON.stringify(m.metadata || {}, null, 1)], ["Id", m.id],
    ];
    const card = el("article", { class: "card", id: "mem-one", "data-id": m.id }, back,
      el("h2", { text: "Memory" }),
      el("dl", { class: "kv" }, fields.filter(([, v]) => v).map(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })])));
    const actions = row(m);
    actions.querySelector(".mem-content")?.remove();
    actions.querySelector("a")?.remove();
    card.append(actions);
    clear(detail, card);
  }

  return {
    show(params) {
      state.detail = params.id;
      const one = Boolean(params.id);
      browse.hidden = one;
      detail.hidden = !one;
      if (one) showDetail(params.id);
      else {
        clear(detail);
        refresh();
      }
    },
    hide() {},
  };
}
