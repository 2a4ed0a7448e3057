// Memory Studio: sign-in, the session (key in sessionStorage only), the owner being viewed,
// the tabs (keyboard: arrows, Home, End) and the hash router (#/memories/<id>, #/sleep, #/graph/<id>, ...).

import { Api } from "./api.js";
import { hideBanner, showBanner, showFieldError } from "./ui.js";
import * as memories from "./memories.js";
import * as playground from "./playground.js";
import * as engine from "./engine.js";
import * as sleepTab from "./sleep.js";
import { refreshBadge as refreshConflicts } from "./conflicts.js";
import * as activity from "./activity.js";
import * as graph from "./graph.js";

const TABS = { memories, playground, engine, sleep: sleepTab, activity, graph };
const KEY_ITEM = "memoryd.studio.key";
const OWNER_ITEM = "memoryd.studio.owner";

class Studio {
  constructor() {
    this.api = null;
    this.role = null; // "owner" | "operator"
    this.owner = null; // the owner being viewed (fixed for an owner key)
    this.mounted = {};
    this.current = null;
  }

  get isOperator() {
    return this.role === "operator";
  }

  // Any failed call lands here: a banner, the field marked, and a bad key signs out.
  fail(error, form = null) {
    if (error && error.name === "AbortError") return;
    console.warn("studio:", error);
    if (!error || !error.kind) {
      showBanner(String(error && error.message ? error.message : error));
      return;
    }
    if (form && error.kind === "validation") showFieldError(form, error);
    showBanner(error);
    if (error.kind === "auth" && this.api) this.signOut(false);
  }

  async signIn(key, { quiet = false } = {}) {
    const api = new Api(key);
    let me;
    try {
      me = await api.call("whoami");
    } catch (error) {
      if (!quiet || error.kind !== "auth") this.fail(error);
      if (error.kind === "auth") sessionStorage.removeItem(KEY_ITEM);
      return false;
    }
    this.role = me.role === "operator" ? "operator" : "owner";
    this.owner = this.isOperator ? sessionStorage.getItem(OWNER_ITEM) || me.owner || null : me.owner;
    this.api = api;
    api.owner = this.owner;
    sessionStorage.setItem(KEY_ITEM, key);
    hideBanner();
    this.renderWho();
    if (this.isOperator) this.suggestOwners();
    document.getElementById("signin").hidden = true;
    document.getElementById("studio").hidden = false;
    this.route();
    refreshConflicts(this);
    return true;
  }

  signOut(clearBanner = true) {
    sessionStorage.clear(); // the key, the owner viewed, the activity samples
    this.settingsCache = null;
    for (const mod of Object.values(this.mounted)) mod.hide?.();
    for (const panel of document.querySelectorAll("[role=tabpanel]")) panel.replaceChildren();
    this.api = this.role = this.owner = this.current = null;
    this.mounted = {};
    refreshConflicts(this);
    if (clearBanner) hideBanner();
    document.getElementById("who").hidden = true;
    document.getElementById("studio").hidden = true;
    document.getElementById("signin").hidden = false;
    document.getElementById("api-key").value = "";
    document.getElementById("api-key").focus();
  }

  setOwner(owner) {
    if (!this.isOperator) return; // an owner key always views its own owner
    this.owner = owner || null;
    this.api.owner = this.owner;
    if (this.owner) sessionStorage.setItem(OWNER_ITEM, this.owner);
    else sessionStorage.removeItem(OWNER_ITEM);
    this.renderWho();
    if (this.current) this.mounted[this.current.tab].show(this.current.params);
    refreshConflicts(this);
  }

  // Owners an operator may want: those with recent sleep runs (a hint; any owner can be typed).
  async suggestOwners() {
    try {
      const res = await this.api.call("sleepStatus", { query: { limit: 200 } });
      const owners = [...new Set((res.runs || []).map((r) => r.owner))].sort();
      const list = document.getElementById("owner-list");
      list.replaceChildren(...owners.map((o) => Object.assign(document.createElement("option"), { value: o })));
    } catch {
      // only a hint: the owner field works without it
    }
  }

  renderWho() {
    document.getElementById("who").hidden = false;
    document.getElementById("who-role").textContent = this.isOperator ? "operator key" : "owner key";
    const pick = document.getElementById("owner-pick");
    const fixed = document.getElementById("who-owner");
    pick.hidden = !this.isOperator;
    fixed.hidden = this.isOperator;
    fixed.textContent = this.owner ? `owner ${this.owner}` : "";
    document.getElementById("owner-input").value = this.owner || "";
  }

  // #/<tab>[/<id>]
  parse(hash) {
    const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
    const tab = TABS[parts[0]] ? parts[0] : "memories";
    return { tab, params: { id: tab === parts[0] ? parts[1] || null : null } };
  }

  route() {
    if (!this.api) return;
    const { tab, params } = this.parse(location.hash);
    for (const [name, button] of Object.entries(tabButtons())) {
      const selected = name === tab;
      button.setAttribute("aria-selected", String(selected));
      button.tabIndex = selected ? 0 : -1;
      document.getElementById(`panel-${name}`).hidden = !selected;
    }
    if (this.current && this.current.tab !== tab) this.mounted[this.current.tab].hide?.();
    if (!this.mounted[tab]) {
      this.mounted[tab] = TABS[tab].create(document.getElementById(`panel-${tab}`), this);
    }
    this.current = { tab, params };
    this.mounted[tab].show(params);
  }

  go(path) {
    if (location.hash === `#/${path}`) this.route();
    else location.hash = `#/${path}`;
  }
}

function tabButtons() {
  const out = {};
  for (const b of document.querySelectorAll("[role=tab]")) out[b.dataset.tab] = b;
  return out;
}

function wireTabs(studio) {
  const buttons = [...document.querySelectorAll("[role=tab]")];
  for (const [i, b] of buttons.entries()) {
    b.addEventListener("click", () => studio.go(b.dataset.tab));
    b.addEventListener("keydown", (ev) => {
      const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: buttons.length - 1 };
      if (!(ev.key in moves)) return;
      ev.preventDefault();
      const next = buttons[(moves[ev.key] + buttons.length) % buttons.length];
      next.focus();
      studio.go(next.dataset.tab);
    });
  }
}

function start() {
  const studio = new Studio();
  window.memoryStudio = studio; // for debugging from the console
  wireTabs(studio);
  document.getElementById("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = document.getElementById("api-key");
    const key = input.value.trim();
    if (!key) {
      showFieldError(ev.target, { field: "api-key", message: "Enter an API key." });
      return;
    }
    studio.signIn(key);
  });
  document.getElementById("sign-out").addEventListener("click", () => studio.signOut());
  document.getElementById("banner-close").addEventListener("click", hideBanner);
  document.getElementById("owner-input").addEventListener("change", (ev) => studio.setOwner(ev.target.value.trim()));
  window.addEventListener("hashchange", () => studio.route());
  const saved = sessionStorage.getItem(KEY_ITEM);
  if (saved) studio.signIn(saved, { quiet: true });
  else document.getElementById("api-key").focus();
}

start();
