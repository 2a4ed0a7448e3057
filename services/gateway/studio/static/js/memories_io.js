// Memories tab, bulk tools: export as JSON lines, import a file (progress bar, per-line
// errors), and "compact old" (a dry run lists the candidates before anything changes).

import { clear, confirmDialog, el, guarded, showBanner } from "./ui.js";
import { receiptText } from "./memories.js";

const CHUNK_BYTES = 512 * 1024; // one import request; the server takes each request whole or not at all

// Lines of `text` in requests of at most CHUNK_BYTES: [{start (0-based line), lines}]
export function chunks(text) {
  const lines = text.split(/\r?\n/);
  while (lines.length && !lines[lines.length - 1].trim()) lines.pop();
  const out = [];
  let start = 0;
  while (start < lines.length) {
    let end = start;
    let size = 0;
    while (end < lines.length && (end === start || size + lines[end].length + 1 <= CHUNK_BYTES)) {
      size += lines[end].length + 1;
      end += 1;
    }
    out.push({ start, lines: lines.slice(start, end).join("\n") });
    start = end;
  }
  return out;
}

export function ioTools(studio, refresh) {
  const progress = el("progress", { id: "import-progress", max: 100, value: 0, "aria-label": "Import progress", hidden: true });
  const importReport = el("div", { id: "import-report", role: "status" });
  const file = el("input", { id: "import-file", name: "file", type: "file", accept: ".jsonl,.ndjson,.json,.txt,application/x-ndjson" });
  const importForm = el(
    "form",
    { id: "mem-import", "aria-labelledby": "mem-io-title" },
    el("label", { for: "import-file" }, el("span", { text: "Import a JSON-lines file (as exported)" }), file),
    el("button", { type: "submit", text: "Import" }),
    progress,
    importReport,
  );
  importForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!studio.owner) return showBanner("Pick an owner first.");
    if (!file.files.length) return showBanner("Choose a file to import.");
    await guarded(studio, () => runImport(file.files[0]), { form: importForm, button: importForm.querySelector("[type=submit]") });
  });

  async function runImport(f) {
    const parts = chunks(await f.text());
    const totals = { imported: 0, updated: 0, unchanged: 0 };
    const errors = [];
    progress.hidden = false;
    progress.value = 0;
    clear(importReport, el("p", { text: `Importing ${f.name}…` }));
    for (const [i, part] of parts.entries()) {
      const res = await studio.api.call("importLines", { body: studio.api.ownerBody({ lines: part.lines }) });
      for (const k of Object.keys(totals)) totals[k] += res[k] || 0;
      for (const e of res.errors || []) errors.push({ line: e.line + part.start, error: e.error });
      progress.value = Math.round((100 * (i + 1)) / parts.length);
    }
    progress.value = 100;
    clear(
      importReport,
      el("p", { id: "import-summary", text: `Imported ${totals.imported}, updated ${totals.updated}, unchanged ${totals.unchanged}` +
        (errors.length ? `; ${errors.length} line(s) refused (their request was not applied).` : ".") }),
      errors.length
        ? el("ul", { class: "errors", id: "import-errors" }, errors.slice(0, 200).map((e) => el("li", { text: `line ${e.line}: ${e.error}` })))
        : null,
    );
    refresh();
  }

  const exportButton = el("button", { type: "button", id: "mem-export", class: "ghost", text: "Export JSON lines" });
  exportButton.addEventListener("click", () =>
    guarded(studio, async () => {
      if (!studio.owner) return showBanner("Pick an owner first.");
      const res = await studio.api.raw("exportLines", { query: studio.api.ownerQuery() });
      const blob = new Blob([await res.blob()], { type: "application/x-ndjson" });
      const a = el("a", { href: URL.createObjectURL(blob), download: `memories-${studio.owner}.jsonl` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    }, { button: exportButton }),
  );

  const compactReport = el("div", { id: "compact-report", role: "status" });
  const compactForm = el(
    "form",
    { id: "mem-compact" },
    el("label", { for: "compact-days" }, el("span", { text: "Compact memories older than (days)" }),
      el("input", { id: "compact-days", name: "older_than_days", type: "number", min: 0, value: 30, inputmode: "numeric" })),
    el("button", { type: "submit", class: "ghost", text: "Dry run" }),
    compactReport,
  );
  compactForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!studio.owner) return showBanner("Pick an owner first.");
    const days = Number(new FormData(compactForm).get("older_than_days"));
    guarded(studio, () => compact(days), { form: compactForm, button: compactForm.querySelector("[type=submit]") });
  });

  async function compact(days) {
    const body = studio.api.ownerBody({ older_than_days: days, dry_run: true });
    const dry = await studio.api.call("summarize", { body });
    if (!dry.candidates) {
      clear(compactReport, el("p", { text: `Nothing older than ${days} days to compact.` }));
      return;
    }
    const go = el("button", { type: "button", class: "danger", id: "compact-run", text: `Compact ${dry.candidates} memories` });
    clear(
      compactReport,
      el("p", { id: "compact-candidates", text: `${dry.candidates} candidates: ${dry.tokens_before} tokens now, about ${dry.tokens_after} after.` }),
      el("ul", { class: "ids" }, (dry.candidate_ids || []).slice(0, 50).map((id) =>
        el("li", {}, el("a", { href: `#/memories/${encodeURIComponent(id)}`, text: id })))),
      studio.isOperator ? go : el("p", { class: "muted", text: "An operator key can compact them; an owner key sees the dry run." }),
    );
    go.addEventListener("click", async () => {
      if (!(await confirmDialog("Compact old memories?", `${dry.candidates} memories become summaries; originals stay archived.`, "Compact"))) return;
      const done = await guarded(studio, () => studio.api.call("summarize", { body: { ...body, dry_run: false } }), { button: go });
      if (!done) return;
      clear(compactReport, el("p", { text: `Compacted ${done.candidates} memories into ${(done.summary_ids || []).length} summaries. Removed vectors: ${receiptText(done.removed)}.` }));
      refresh();
    });
  }

  const node = el(
    "section",
    { class: "card", "aria-labelledby": "mem-io-title" },
    el("h3", { id: "mem-io-title", text: "Import, export, compact" }),
    importForm,
    el("div", { class: "row" }, exportButton),
    compactForm,
  );
  return { node };
}
