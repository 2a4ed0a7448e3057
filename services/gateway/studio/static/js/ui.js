// Small DOM helpers shared by the tabs: element builder (text only, never HTML from data),
// the error banner, field errors, the confirmation dialog, bars and formatters.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k in node && typeof v !== "string") node[k] = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// --- banner -------------------------------------------------------------------------------
const BANNER_TEXT = {
  auth: () => "The API key was not accepted. Sign in again with a valid key.",
  forbidden: (e) => `This key may not do that: ${e.message}`,
  network: () => "Cannot reach the gateway. Check that memoryd is running.",
  down: (e) => `The gateway is up but a service behind it is down: ${e.message}`,
  notfound: (e) => `Not found: ${e.message}`,
  toolarge: (e) => `Too large: ${e.message}`,
  budget: (e) => `Budget exceeded: ${e.message}`,
  server: (e) => `The server failed${e.errorId ? ` (error id ${e.errorId})` : ""}: ${e.message}`,
};

export function bannerText(error) {
  if (error.kind === "validation") {
    return error.field ? `Invalid ${error.field}: ${error.message}` : `Invalid request: ${error.message}`;
  }
  const make = BANNER_TEXT[error.kind];
  return make ? make(error) : String(error.message || error);
}

let bannerTimer = null;

// Errors stay until dismissed or replaced; confirmations ("info") fade after a few seconds.
export function showBanner(error, level = "error") {
  const banner = document.getElementById("banner");
  clearTimeout(bannerTimer);
  if (level === "info") bannerTimer = setTimeout(hideBanner, 4000);
  banner.dataset.kind = typeof error === "string" ? "info" : error.kind || "error";
  banner.dataset.level = level;
  document.getElementById("banner-text").textContent = typeof error === "string" ? error : bannerText(error);
  banner.hidden = false;
}

export function hideBanner() {
  document.getElementById("banner").hidden = true;
}

// Mark the input named like the error's field (aria-invalid + a message under it).
export function showFieldError(form, error) {
  clearFieldErrors(form);
  if (!error.field) return false;
  const name = error.field.split(/[.[]/)[0];
  const input = form.querySelector(`[name="${CSS.escape(name)}"]`);
  if (!input) return false;
  input.setAttribute("aria-invalid", "true");
  const msg = el("p", { class: "field-error", id: `${input.id || name}-error`, text: error.message });
  input.setAttribute("aria-describedby", msg.id);
  input.insertAdjacentElement("afterend", msg);
  input.focus();
  return true;
}

export function clearFieldErrors(form) {
  for (const n of form.querySelectorAll("[aria-invalid]")) {
    n.removeAttribute("aria-invalid");
    n.removeAttribute("aria-describedby");
  }
  for (const n of form.querySelectorAll(".field-error")) n.remove();
}

// --- confirmation ---------------------------------------------------------------------------
export function confirmDialog(title, text, okLabel = "Confirm") {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel;
  const opener = document.activeElement;
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        if (opener && opener.focus) opener.focus();
        resolve(dialog.returnValue === "ok");
      },
      { once: true },
    );
    dialog.returnValue = "cancel";
    dialog.showModal();
    document.getElementById("confirm-cancel").focus();
  });
}

// --- formatting -----------------------------------------------------------------------------
export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export function num(value, digits = 3) {
  if (value === undefined || value === null) return "—";
  return Number.isInteger(value) ? String(value) : Number(value).toFixed(digits);
}

// A labelled horizontal bar: value in [0, max].
export function bar(label, value, max, text) {
  const pct = value === null || value === undefined || !max ? 0 : Math.max(0, Math.min(100, (100 * value) / max));
  const fill = el("span", { class: "bar-fill" });
  fill.style.width = `${pct.toFixed(1)}%`; // CSSOM, not a style attribute: allowed by the page's CSP
  return el(
    "div",
    { class: "bar", role: "meter", "aria-label": label, "aria-valuemin": "0", "aria-valuemax": String(max || 1),
      "aria-valuenow": String(value ?? 0) },
    fill,
    el("span", { class: "bar-text", text: text ?? num(value) }),
  );
}

export function chip(text, tone = "") {
  return el("span", { class: `chip ${tone}`.trim(), text });
}

export function empty(text, ...extra) {
  return el("div", { class: "empty" }, el("p", { text }), ...extra);
}

export function debounce(fn, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// Run an async action from a form or button: disable it, show errors on the banner / field.
export async function guarded(studio, action, { form = null, button = null } = {}) {
  if (button) button.disabled = true;
  if (form) clearFieldErrors(form);
  try {
    return await action();
  } catch (error) {
    studio.fail(error, form);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}
