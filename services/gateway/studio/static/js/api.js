// The gateway's REST API as the Studio uses it: one table of routes, one request function,
// one error type. Nothing else in the Studio builds a URL or calls fetch.

export const ROUTES = {
  whoami: ["GET", "/v1/whoami"],
  stats: ["GET", "/v1/stats"],
  activity: ["GET", "/v1/activity"],
  activityHistory: ["GET", "/v1/activity/history"],
  list: ["GET", "/v1/memories"],
  create: ["POST", "/v1/memories"],
  get: ["GET", "/v1/memories/{id}"],
  update: ["PATCH", "/v1/memories/{id}"],
  remove: ["DELETE", "/v1/memories/{id}"],
  restore: ["POST", "/v1/memories/{id}/restore"],
  exportLines: ["GET", "/v1/export"],
  importLines: ["POST", "/v1/import"],
  summarize: ["POST", "/v1/summarize"],
  preview: ["POST", "/v1/search/preview"],
  inject: ["POST", "/v1/inject"],
  engine: ["GET", "/v1/engine/status"],
  embeddingModels: ["GET", "/v1/embedding/models"],
  reindex: ["POST", "/v1/reindex"],
  reindexProgress: ["GET", "/v1/reindex"],
  health: ["GET", "/v1/health"],
  settingsGet: ["GET", "/v1/settings"],
  settingsPut: ["PUT", "/v1/settings"],
  sleepRun: ["POST", "/v1/sleep/runs"],
  sleepStatus: ["GET", "/v1/sleep/status"],
  // the conflict review queue (Sleep tab)
  conflicts: ["GET", "/v1/conflicts"],
  conflictResolve: ["POST", "/v1/conflicts/{id}/resolve"],
  // the entity graph (Graph tab)
  entities: ["GET", "/v1/entities"],
  relations: ["GET", "/v1/relations"],
};

// kind: auth (401) | forbidden (403) | notfound (404) | validation (400/422) | toolarge (413)
//       | budget (429) | down (502/503/504: the gateway answered, a service behind it did not)
//       | network (the gateway did not answer) | server (500)
export class ApiError extends Error {
  constructor(kind, status, message, field = null, errorId = null) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.field = field;
    this.errorId = errorId;
  }
}

const KINDS = { 400: "validation", 401: "auth", 403: "forbidden", 404: "notfound", 413: "toolarge", 422: "validation", 429: "budget" };

// "Expected `str` of length <= 200 - at `$.content`" -> "content"; "$.messages[0].role" -> "messages[0].role"
export function fieldOf(problem) {
  const explicit = problem.field || problem.path || problem.pointer;
  const text = String(explicit || problem.detail || problem.description || "");
  const m = text.match(/\$\.([A-Za-z0-9_.[\]]+)/) || (explicit ? [null, explicit] : null);
  return m ? String(m[1]).replace(/^\//, "").replace(/\//g, ".") : null;
}

function errorFrom(status, problem) {
  const kind = KINDS[status] || (status >= 502 && status <= 504 ? "down" : status >= 500 ? "server" : "validation");
  const message = problem.detail || problem.description || problem.title || `HTTP ${status}`;
  return new ApiError(kind, status, message, kind === "validation" ? fieldOf(problem) : null, problem.error_id || null);
}

export class Api {
  constructor(key, owner = null) {
    this.key = key;
    this.owner = owner; // sent with every owner-scoped call; the gateway refuses another owner for an owner key
  }

  url(name, { id, query } = {}) {
    const [, template] = ROUTES[name];
    let path = template.replace("{id}", encodeURIComponent(id ?? ""));
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query || {})) {
      if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
    }
    const qs = params.toString();
    return qs ? `${path}?${qs}` : path;
  }

  async raw(name, { id, query, body, headers, signal } = {}) {
    const [method] = ROUTES[name];
    const init = { method, headers: { Authorization: `Bearer ${this.key}`, ...headers }, signal, cache: "no-store" };
    if (body !== undefined) {
      init.headers["Content-Type"] = typeof body === "string" ? "application/x-ndjson" : "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(this.url(name, { id, query }), init);
    } catch (exc) {
      if (exc.name === "AbortError") throw exc;
      throw new ApiError("network", 0, "The gateway did not answer: check that memoryd is running.");
    }
    if (!res.ok) {
      let problem = {};
      try {
        problem = await res.json();
      } catch {
        problem = { title: res.statusText };
      }
      throw errorFrom(res.status, problem);
    }
    return res;
  }

  async call(name, options = {}) {
    const res = await this.raw(name, options);
    if (res.status === 204) return {};
    const text = await res.text();
    return text ? JSON.parse(text) : {};
  }

  // Owner-scoped helpers: the owner goes in the query of reads and in the body of writes.
  ownerQuery(query = {}) {
    return this.owner ? { owner: this.owner, ...query } : query;
  }

  ownerBody(body = {}) {
    return this.owner ? { owner: this.owner, ...body } : body;
  }
}
