// Activity tab (operator keys): chat events and searches per minute and the queue lag per
// stage, sampled from the services' own counters (GET /v1/activity) while the page is open.

import { clear, el, empty, guarded } from "./ui.js";
import { lineChart } from "./chart.js";

const EVERY_MS = 3000;
const KEEP = 120; // samples (6 minutes)
const STORE = "memoryd.studio.activity";

export function create(panel, studio) {
  const charts = el("div", { id: "activity-charts", class: "grid2" });
  const note = el("p", { class: "muted", id: "activity-note" });
  panel.append(el("h2", { text: "Activity" }), note, charts);
  let samples = JSON.parse(sessionStorage.getItem(STORE) || "[]");
  let timer = null;

  async function sample() {
    const s = await guarded(studio, () => studio.api.call("activity"));
    if (!s) return;
    samples.push({ t: Date.parse(s.at) || Date.now(), events: s.events || 0, searches: s.searches || 0, lag: s.lag || {} });
    samples = samples.slice(-KEEP);
    sessionStorage.setItem(STORE, JSON.stringify(samples));
    render(s);
  }

  // Counters only grow (a restart resets them: a negative step counts as 0).
  function rate(key) {
    const out = [];
    for (let i = 1; i < samples.length; i++) {
      const dt = (samples[i].t - samples[i - 1].t) / 60000;
      if (dt > 0) out.push({ t: samples[i].t, v: Math.max(0, samples[i][key] - samples[i - 1][key]) / dt });
    }
    return out;
  }

  function render(latest) {
    const stages = [...new Set(samples.flatMap((s) => Object.keys(s.lag)))].filter((k) => !k.endsWith("_ack_pending"));
    const missing = Object.entries(latest.errors || {}).map(([what, why]) => `${what} (${why})`);
    note.textContent = `Since start: ${latest.events} chat events, ${latest.searches} searches. Sampled every ${EVERY_MS / 1000} s while this tab is open.` +
      (missing.length ? ` Not answering: ${missing.join("; ")}.` : "");
    if (samples.length < 2) {
      clear(charts, empty("Collecting the first samples…"));
      return;
    }
    clear(
      charts,
      lineChart("Events and searches per minute", [
        { name: "chat events/min", points: rate("events") },
        { name: "searches/min", points: rate("searches") },
      ]),
      stages.length
        ? lineChart("Queue lag (messages waiting)", stages.map((st) => ({ name: st, points: samples.map((s) => ({ t: s.t, v: s.lag[st] || 0 })) })))
        : empty("No pipeline consumer reported yet."),
    );
  }

  return {
    show() {
      clearInterval(timer);
      if (!studio.isOperator) {
        note.textContent = "";
        clear(charts, empty("Activity across owners is for operator keys."));
        return;
      }
      sample();
      timer = setInterval(() => { if (!document.hidden) sample(); }, EVERY_MS);
    },
    hide() {
      clearInterval(timer);
    },
  };
}
