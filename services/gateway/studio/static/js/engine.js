// Engine tab: the embedding-signature change in progress (n of N, and what search serves
// meanwhile) on top while it lasts; status chips (keyword tier, embedding source and model,
// vector stores and their health, rerank, LLM route); the embedding models to pick from; pending
// reindex with "reindex now" and a live progress bar; queue lag per stage; and the runtime
// settings (operator only) with the API's validation, next to what memory costs: the prompt
// tokens the proxy may add to every call.

import { bar, chip, clear, el, empty, guarded, showBanner, sleep } from "./ui.js";
import { renderReindexState } from "./reindex_state.js";

export function create(panel, studio) {
  const change = el("section", { class: "card reindex-state", id: "engine-reindex-state", role: "status", hidden: true });
  const chips = el("div", { class: "chips", id: "engine-chips", "aria-live": "polite" });
  const reindex = el("div", { class: "card", id: "engine-reindex" });
  const lag = el("div", { class: "card", id: "engine-lag" });
  const settings = el("div", { class: "card", id: "engine-settings" });
  const models = el("div", { class: "card", id: "engine-models" });
  panel.append(el("h2", { class: "sr-only", text: "Engine" }), change, chips, models, el("div", { class: "grid2" }, reindex, lag), settings);
  let alive = false;
  let timer = null;
  let running = false; // a reindex is being watched: the periodic refresh leaves its card alone
  const progressBox = el("div", { id: "reindex-watch" });

  async function load() {
    const status = await guarded(studio, () => studio.api.call("engine", { query: studio.api.ownerQuery() }));
    if (!status) return null;
    const health = studio.isOperator ? await studio.api.call("health").catch(() => null) : null;
    renderReindexState(change, status.vector_stores);
    renderChips(status, health, studio.settingsCache || null);
    renderLag(status.lag || {});
    return status;
  }

  function renderChips(status, health, values) {
    const emb = status.embedding || {};
    const probe = emb.probe || {};
    const stores = status.vector_stores || {};
    const llm = findCheck(health, "llm");
    const rerank = !values ? "unknown" : values.rerank ? `on · depth ${values.rerankDepth ?? "?"}` : "off";
    clear(
      chips,
      el("span", { class: "chip-group" }, el("b", { text: "Keyword" }), chip(status.keyword_tier || "—", "ok")),
      el("span", { class: "chip-group" }, el("b", { text: "Embedding" }),
        probe.ok ? chip(probe.signature || "ok", "ok") : chip(probe.error ? `down: ${probe.error}` : "unknown", "bad"),
        emb.breaker ? chip(`breaker ${emb.breaker}`, emb.breaker === "closed" ? "muted" : "warn") : null),
      Object.entries(stores).map(([name, s]) =>
        el("span", { class: "chip-group" }, el("b", { text: `Store ${name}` }),
          chip(s.healthy === false ? `unhealthy${s.detail ? `: ${s.detail}` : ""}` : s.healthy ? `healthy · ${s.vectors ?? 0} vectors` : s.detail || "idle",
            s.healthy === false ? "bad" : s.healthy ? "ok" : "muted"))),
      el("span", { class: "chip-group" }, el("b", { text: "Rerank" }), chip(rerank, rerank.startsWith("on") ? "ok" : "muted")),
      el("span", { class: "chip-group" }, el("b", { text: "LLM route" }),
        chip(llm || (studio.isOperator ? "unknown" : "operator only"), llm && llm.startsWith("ok") ? "ok" : "muted")),
    );
    renderReindex(status.pending_reindex || 0);
  }

  function renderReindex(pending) {
    if (running) return;
    const button = el("button", { type: "button", id: "reindex-now", text: "Reindex now", disabled: !studio.isOperator });
    button.addEventListener("click", () => guarded(studio, () => runReindex(), { button }));
    clear(
      reindex,
      el("h3", { text: "Reindex" }),
      el("p", { id: "reindex-pending", text: pending ? `${pending} memories wait for (re)embedding.` : "Every memory has a current vector." }),
      studio.isOperator ? button : el("p", { class: "muted", text: "An operator key can start a reindex." }),
      progressBox,
    );
  }

  async function runReindex() {
    const body = studio.owner ? { owner: studio.owner } : {};
    running = true;
    try {
      const first = await studio.api.call("reindex", { body });
      const total = Math.max(first.pending || 0, first.queued || 0);
      const progress = el("progress", { id: "reindex-progress", max: 100, value: 0, "aria-label": "Reindex progress" });
      const label = el("p", { id: "reindex-label", role: "status" });
      clear(progressBox, progress, label);
      let pending = first.pending || 0;
      while (pending > 0 && alive) {
        const pct = total ? Math.round((100 * (total - pending)) / total) : 100;
        progress.value = pct;
        label.textContent = `${pct} % · ${pending} of ${total} left (${first.signature})`;
        await sleep(700);
        pending = (await studio.api.call("reindexProgress", { query: body })).pending || 0;
      }
      if (pending > 0) return; // the tab was left: the reindex goes on in the background
      progress.value = 100;
      label.textContent = `100 % · ${total} memories embedded with ${first.signature}`;
    } finally {
      running = false;
    }
  }

  function renderLag(values) {
    const entries = Object.entries(values).filter(([k]) => !k.endsWith("_ack_pending"));
    const max = Math.max(1, ...Object.values(values));
    clear(
      lag,
      el("h3", { text: "Queue lag" }),
      entries.length
        ? el("dl", { class: "kv", id: "lag-list" }, entries.map(([stage, n]) => [
          el("dt", { text: stage }),
          el("dd", {}, bar(`${stage} lag`, n, max, `${n} waiting · ${values[`${stage}_ack_pending`] ?? 0} in flight`)),
        ]))
        : empty("No pipeline consumer reported yet."),
    );
  }

  async function loadModels() {
    const got = await guarded(studio, () => studio.api.call("embeddingModels"));
    if (got) clear(models, modelsCard(got));
  }

  async function loadSettings() {
    const query = studio.owner ? { owner: studio.owner } : {};
    const got = await guarded(studio, () => studio.api.call("settingsGet", { query }));
    if (got) studio.settingsCache = got.settings;
    if (!studio.isOperator) {
      clear(settings, el("h3", { text: "Settings" }), got ? costLine(got.settings) : null,
        el("p", { class: "muted", text: "Changing runtime settings needs an operator key." }));
      return;
    }
    if (!got) return;
    const form = el("form", { id: "settings-form", class: "settings", novalidate: true });
    for (const [name, value] of Object.entries(got.settings || {}).sort()) {
      const id = `set-${name}`;
      const source = (got.sources || {})[name] || "default";
      let control;
      if (typeof value === "boolean") control = el("input", { id, name, type: "checkbox", checked: value });
      else if (typeof value === "number") control = el("input", { id, name, type: "number", step: "any", value: String(value) });
      else if (value !== null && typeof value === "object") control = el("textarea", { id, name, rows: 2, text: JSON.stringify(value) });
      else control = el("input", { id, name, value: value ?? "", autocomplete: "off", type: /key|secret|password/i.test(name) ? "password" : "text" });
      control.dataset.initial = JSON.stringify(value);
      form.append(el("label", { for: id, class: "setting" }, el("span", {}, name, " ", chip(source, "muted")), control));
    }
    const save = el("button", { type: "submit", text: studio.owner ? `Save for owner ${studio.owner}` : "Save globally" });
    form.append(el("div", { class: "row" }, save));
    // what memory costs stays with the two settings that make it, and follows them as they are edited
    const cost = costLine(got.settings);
    const control = (name) => form.querySelector(`[name="${name}"]`);
    for (const name of ["enabled", "maxTokens"]) control(name)?.setAttribute("aria-describedby", cost.id);
    form.addEventListener("input", () => {
      const on = control("enabled"), budget = control("maxTokens");
      cost.textContent = costText({
        enabled: on ? on.checked : got.settings.enabled,
        maxTokens: budget ? Number(budget.value) : got.settings.maxTokens,
      });
    });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const values = {};
      for (const c of form.querySelectorAll("input, textarea")) {
        // an emptied text field is "not set" (null), as the API reports an unset value
        let v = c.type === "checkbox" ? c.checked : c.type === "number" ? Number(c.value) : c.value === "" ? null : c.value;
        if (c.tagName === "TEXTAREA") {
          try {
            v = JSON.parse(c.value);
          } catch {
            v = c.value;
          }
        }
        if (JSON.stringify(v) !== c.dataset.initial) values[c.name] = v;
      }
      if (!Object.keys(values).length) return showBanner("Nothing changed.", "info");
      guarded(studio, async () => {
        await studio.api.call("settingsPut", { body: { ...query, values } });
        showBanner(`Saved ${Object.keys(values).join(", ")}.`, "info");
        loadSettings();
      }, { form, button: save });
    });
    clear(settings, el("h3", { text: studio.owner ? `Settings (owner ${studio.owner} over global)` : "Settings (global)" }), cost, form);
  }

  return {
    async show() {
      alive = true;
      clearInterval(timer);
      await loadSettings();
      await Promise.all([load(), loadModels()]);
      timer = setInterval(() => { if (alive && !document.hidden) load(); }, 5000);
    },
    hide() {
      alive = false;
      clearInterval(timer);
    },
  };
}

// Embedding models: what embeddingSource accepts and resolves to, the shipped and the remote model.
function modelsCard(m) {
  const status = (x) => (x.in_use ? chip("in use", "ok") : x.configured ? chip("configured", "muted") : chip("not configured", "muted"));
  return [
    el("h3", { text: "Embedding models" }),
    el("p", { id: "embedding-sources" }, "embeddingSource accepts ", (m.sources || []).map((s) => [chip(s, s === m.source ? "ok" : "muted"), " "]),
      `· set to ${m.source}${m.source === "auto" ? ` (uses ${m.resolves_to})` : ""} · quantization ${m.quantization || "none"}`),
    el("div", { class: "scroll" }, el("table", { class: "phases", id: "embedding-models" },
      el("thead", {}, el("tr", {}, ["Source", "Model", "Dimension", ""].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, (m.models || []).map((x) => el("tr", { "data-source": x.source },
        el("td", { text: x.source === "local" ? "local (shipped)" : "remote" }),
        el("td", { text: x.model || "—" }),
        el("td", { text: x.dim ? String(x.dim) : "—" }),
        el("td", {}, status(x))))))),
  ];
}

// The prompt tokens the memory proxy may add to each call (the upstream bills them).
export function costText(values) {
  if (!values || values.enabled === false) return "Memory is off: the proxy adds no prompt tokens to proxied calls.";
  const n = Number(values.maxTokens ?? 2000);
  return `Memory is on: memory adds up to ${n.toLocaleString("en")} prompt tokens per proxied call (enabled, maxTokens), billed by the upstream.`;
}

function costLine(values) {
  return el("p", { id: "memory-cost", class: "cost", role: "status", text: costText(values) });
}

function findCheck(health, name) {
  if (!health) return null;
  const services = health.services || (health.checks ? { gateway: health } : health);
  for (const s of Object.values(services || {})) {
    if (s && s.checks && s.checks[name]) return s.checks[name];
  }
  return null;
}
