// Playground tab: simulate a retrieval, optionally of one session or agent (ranking with score,
// tier, tokens, keyword and vector scores and ranks as bars; which tier served and every fallback
// with its reason) and show the exact messages an injected chat request would carry.

import { bar, chip, clear, el, empty, guarded, num } from "./ui.js";

const STRATEGIES = [
  ["hybrid", "hybrid (keyword + vector)"],
  ["semantic", "semantic (vector)"],
  ["exact", "recent (newest first)"],
];

export function create(panel, studio) {
  const form = el(
    "form",
    { class: "card", id: "pg-form", "aria-labelledby": "pg-title", novalidate: true },
    el("h2", { id: "pg-title", text: "Retrieval playground" }),
    el("label", { for: "pg-query" }, el("span", { text: "Query" }),
      el("input", { id: "pg-query", name: "query", type: "search", autocomplete: "off", placeholder: "what would the app ask?" })),
    el("div", { class: "grid2" },
      el("label", { for: "pg-strategy" }, el("span", { text: "Strategy" }),
        el("select", { id: "pg-strategy", name: "strategy" }, STRATEGIES.map(([v, t]) => el("option", { value: v, text: t })))),
      el("label", { for: "pg-budget" }, el("span", { text: "Token budget" }),
        el("input", { id: "pg-budget", name: "max_tokens", type: "number", min: 0, value: 2000, inputmode: "numeric" })),
      el("label", { for: "pg-session" }, el("span", { text: "Session (optional)" }),
        el("input", { id: "pg-session", name: "session_id", autocomplete: "off" })),
      el("label", { for: "pg-agent" }, el("span", { text: "Agent (optional)" }),
        el("input", { id: "pg-agent", name: "agent_id", autocomplete: "off", placeholder: "every agent" }))),
    el("div", { class: "row" },
      el("button", { type: "submit", id: "pg-simulate", text: "Simulate" }),
      el("button", { type: "button", id: "pg-inject", class: "ghost", text: "Inject" })),
  );
  const out = el("div", { id: "pg-out", "aria-live": "polite" });
  panel.append(form, out);

  function values() {
    const v = Object.fromEntries(new FormData(form).entries());
    const body = { query: v.query || "", strategy: v.strategy };
    if (v.max_tokens !== "") body.max_tokens = Number(v.max_tokens);
    if (v.session_id) body.session_id = v.session_id;
    if (v.agent_id) body.agent_id = v.agent_id;
    return body;
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!studio.owner) return clear(out, empty("Pick an owner above first."));
    guarded(studio, async () => renderRanking(await studio.api.call("preview", { body: studio.api.ownerBody(values()) })), {
      form, button: form.querySelector("#pg-simulate"),
    });
  });

  form.querySelector("#pg-inject").addEventListener("click", (ev) => {
    if (!studio.owner) return clear(out, empty("Pick an owner above first."));
    const v = values();
    const body = { messages: [{ role: "user", content: v.query || "Hello" }], strategy: v.strategy, max_tokens: v.max_tokens,
      session_id: v.session_id, agent_id: v.agent_id, query: v.query || undefined };
    guarded(studio, async () => renderInjection(await studio.api.call("inject", { body: studio.api.ownerBody(body) })), {
      form, button: ev.target,
    });
  });

  function tiers(result) {
    return el(
      "div",
      { class: "card", id: "pg-tiers" },
      el("h3", { text: "Tiers" }),
      el("p", {}, "Strategy ", chip(result.strategy), ` · ${result.tokens_used} tokens used`,
        result.ms !== undefined ? ` · ${num(result.ms, 1)} ms` : ""),
      el("ul", { class: "tiers" }, (result.tiers || []).map((t) =>
        el("li", { class: t.served ? "served" : "" },
          chip(t.tier, t.served ? "ok" : "muted"),
          t.served ? " served" : " did not serve",
          t.hits !== undefined ? ` · ${t.hits} hits` : "",
          ` · ${num(t.ms, 1)} ms`,
          t.reason ? el("span", { class: "reason", text: ` — ${t.reason}` }) : null))),
      (result.fallbacks || []).length
        ? el("div", { id: "pg-fallbacks" }, el("h4", { text: "Fallbacks" }),
          el("ul", {}, result.fallbacks.map((f) => el("li", { text: f }))))
        : el("p", { class: "muted", id: "pg-fallbacks", text: "No fallback: the preferred tier served." }),
      result.disabled_reason ? el("p", { class: "warn", text: `Memory disabled: ${result.disabled_reason}` }) : null,
    );
  }

  function renderRanking(result) {
    const hits = result.memories || [];
    const maxScore = Math.max(1e-9, ...hits.map((m) => m.score || 0));
    const maxFts = Math.max(1e-9, ...hits.map((m) => m.fts_score || 0));
    const maxRank = Math.max(1, ...hits.flatMap((m) => [m.fts_rank || 0, m.vec_rank || 0]));
    const rankBar = (label, rank) => (rank ? bar(label, maxRank + 1 - rank, maxRank, `#${rank}`) : el("span", { class: "muted", text: "—" }));
    const table = hits.length
      ? el("div", { class: "scroll" }, el("table", { id: "pg-ranking", class: "ranking" },
        el("caption", { text: `${hits.length} memories within the budget` }),
        el("thead", {}, el("tr", {}, ["#", "Memory", "Score", "Tier", "Tokens", "Keyword", "Vector", "Keyword rank", "Vector rank"]
          .map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, hits.map((m, i) => el("tr", { "data-id": m.id },
          el("td", { text: String(i + 1) }),
          el("td", {}, el("a", { href: `#/memories/${encodeURIComponent(m.id)}`, text: m.content }),
            m.session_id || m.agent_id
              ? el("div", { class: "mem-meta" },
                m.session_id ? chip(`session ${m.session_id}`, "muted") : null,
                m.agent_id ? chip(`agent ${m.agent_id}`, "muted") : null)
              : null),
          el("td", {}, bar("score", m.score, maxScore, num(m.score, 4))),
          el("td", {}, chip(m.tier)),
          el("td", { text: String(m.tokens) }),
          el("td", {}, m.fts_score !== undefined ? bar("keyword score", m.fts_score, maxFts, num(m.fts_score, 4)) : "—"),
          el("td", {}, m.vec_score !== undefined ? bar("vector score", m.vec_score, 1, num(m.vec_score, 4)) : "—"),
          el("td", {}, rankBar("keyword rank", m.fts_rank)),
          el("td", {}, rankBar("vector rank", m.vec_rank)))))))
      : empty("Nothing matched. Try other words, another strategy or a larger budget.");
    clear(out, tiers(result), el("div", { class: "card" }, el("h3", { text: "Ranking" }), table));
  }

  function renderInjection(result) {
    clear(
      out,
      el("div", { class: "card", id: "pg-injection" },
        el("h3", { text: "Injected request" }),
        el("p", {}, "Placement ", chip(result.placement), ` · ${(result.injected || []).length} memories injected`),
        el("ol", { class: "messages" }, (result.messages || []).map((m) =>
          el("li", {}, chip(m.role), el("pre", { text: m.content }))))),
      result.retrieval ? tiers(result.retrieval) : null,
    );
  }

  return { show() {}, hide() {} };
}
