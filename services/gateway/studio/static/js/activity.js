// Activity tab (operator keys): chat events and searches per minute and the queue lag per
// stage, from the services' own counters: the gateway's last hour (GET /v1/activity/history,
// one sample a minute) when the tab opens, then sampled (GET /v1/activity) while it is open.

import { clear, el, empty, guarded } from "./ui.js";
import { lineChart } from "./chart.js";

const EVERY_MS = 3000;
const STORE = "memoryd.studio.activity";
const HOUR_MS = 3_600_000;

const point = (s) => ({ t: Date.parse(s.at) || Date.now(), events: s.events || 0, searches: s.searches || 0, lag: s.lag || {} });

// One series in time order: the gateway's hour and this tab's samples, none older than an hour.
function merged(a, b) {
  const byTime = new Map([...a, ...b].map((s) => [s.t, s]));
  const cutoff = Date.now() - HOUR_MS;
  return [...byTime.values()].filter((s) => s.t >= cutoff).sort((x, y) => x.t - y.t);
}

export function create(panel, studio) {
  const charts = el("div", { id: "activity-charts", class: "grid2" });
  const note = el("p", { class: "muted", id: "activity-note" });
  panel.append(el("h2", { text: "Activity" }), note, charts);
  let samples = JSON.parse(sessionStorage.getItem(STORE) || "[]");
  let timer = null;
  let historyEvery = null; // seconds between the gateway's own samples, once read

  async function loadHistory() {
    const h = await guarded(studio, () => studio.api.call("activityHistory"));
    if (!h) return;
    historyEvery = h.interval_s;
    samples = merged((h.samples || []).map(point), samples);
  }

  async function sample() {
    const s = await guarded(studio, () => studio.api.call("activity"));
    if (!s) return;
    samples = merged(samples, [point(s)]);
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
    const hour = historyEvery ? ` The gateway keeps the last hour (a sample every ${historyEvery} s).` : "";
    note.textContent = `Since start: ${latest.events} chat events, ${latest.searches} searches. Sampled every ${EVERY_MS / 1000} s while this tab is open.${hour}` +
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
      loadHistory().then(sample);
      timer = setInterval(() => { if (!document.hidden) sample(); }, EVERY_MS);
    },
    hide() {
      clearInterval(timer);
    },
  };
}
