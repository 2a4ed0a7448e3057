/**
 * MemoryClient: memoryd's REST API over the platform `fetch`, one method per route it uses
 * (the routes and types come from src/openapi.ts, generated from clients/openapi.json).
 * Errors are the typed tree of ./errors.ts; 429 and 503 are retried as ./retry.ts decides.
 */

import { ConnectionFailed, type MemorydError, errorFromProblem } from "./errors.js";
import {
  type BatchItem,
  type ChatMessage,
  type ChatPublishRequestBody,
  type MemoriesListQuery,
  type MemoryClearRequestBody,
  type MemoryCreateRequestBody,
  type MemoryRecord,
  type MemoryUpdateRequestBody,
  type Operations,
  type Problem,
  ROUTES,
  type RetrieveRequestBody,
} from "./openapi.js";
import { DEFAULT_RETRY, type RetryPolicy, parseRetryAfter, retryDelayS } from "./retry.js";

export interface MemoryClientOptions {
  /** The gateway, e.g. `http://127.0.0.1:8420` (what `memoryd up` prints as `gateway=`). */
  baseUrl: string;
  /** An API key, `mk_...` (`memoryd keys create --owner ...`). */
  apiKey: string;
  /** Operator keys: the owner to act for (sent as `x-memory-owner`). */
  owner?: string;
  /** Per attempt; 0 for none. Default 30 000. */
  timeoutMs?: number;
  /** Retries of 429 and 503 answers. Default {maxRetries: 2, maxDelayS: 10, baseDelayS: 0.5}. */
  retry?: Partial<RetryPolicy>;
  /** Another `fetch` (a proxy agent, instrumentation). Default the global one. */
  fetch?: typeof fetch;
}

export type SearchOptions = Omit<RetrieveRequestBody, "type" | "query">;
export type AddOptions = Omit<ChatPublishRequestBody, "messages">;
export type CreateOptions = Omit<MemoryCreateRequestBody, "type" | "content">;
export type UpdateFields = Omit<MemoryUpdateRequestBody, "type" | "id">;
export type ListOptions = MemoriesListQuery;
export type ClearOptions = Omit<MemoryClearRequestBody, "type">;
/** A batch item: a text (one memory as it is), or an item whose `messages` may be one user text. */
export type BatchItemLike = string | (Omit<BatchItem, "messages"> & { messages?: BatchItem["messages"] | string });
/** Applied to the items that set none (an operator key names the `owner`). */
export interface BatchOptions {
  owner?: string;
  session_id?: string;
  agent_id?: string;
  metadata?: Record<string, unknown>;
}

type Route = { readonly method: string; readonly path: string };
/** Query parameters; an object (the `filters` of a list) travels as JSON. */
type Query = Record<string, string | number | boolean | Record<string, unknown> | null | undefined>;
interface Parts {
  path?: Record<string, string>;
  query?: Query;
  body?: unknown;
  /** A 503 may come after the gateway acted; retry only when repeating the request is harmless. */
  retryUnavailable?: boolean;
}

const PROBLEM_MEDIA = "application/problem+json";

export class MemoryClient {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #owner: string | undefined;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;
  readonly #fetch: typeof fetch;

  constructor(options: MemoryClientOptions) {
    if (!options?.baseUrl) throw new TypeError("MemoryClient needs baseUrl");
    if (!options.apiKey) throw new TypeError("MemoryClient needs apiKey");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#owner = options.owner;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** Ranked memories for a query, within the token budget. */
  async search(query: string, options: SearchOptions = {}): Promise<Operations["search"]["result"]> {
    const body = { ...options, query };
    return (await this.#request(ROUTES.search, { body })) as Operations["search"]["result"];
  }

  /**
   * Publish chat traffic: the turns are stored, and facts extracted from them, in the background.
   * An `event_id` is generated when none is given, so a retried publish is stored once.
   */
  async add(messages: ChatMessage[], options: AddOptions = {}): Promise<Operations["events_publish"]["result"]> {
    const body = { ...options, messages, event_id: options.event_id ?? crypto.randomUUID() };
    return (await this.#request(ROUTES.events_publish, { body })) as Operations["events_publish"]["result"];
  }

  /** Create a memory (with a `key`: create or update the memory of that key). */
  async create(content: string, options: CreateOptions = {}): Promise<Operations["memories_create"]["result"]> {
    const body = { ...options, content };
    const retryUnavailable = options.key != null; // upserts by key are harmless to repeat
    return (await this.#request(ROUTES.memories_create, { body, retryUnavailable })) as Operations["memories_create"]["result"];
  }

  /**
   * Add many items in one request: a text (or `{content}`) is stored as one memory as it is,
   * `{messages}` is published as a chat event (stored and extracted later). Items are done one by
   * one: `results[i].error` says why item `i` failed, the others are stored. Each messages item
   * gets an `event_id` here, so a retried batch publishes it once.
   */
  async addBatch(items: BatchItemLike[], options: BatchOptions = {}): Promise<Operations["memories_batch"]["result"]> {
    if (!Array.isArray(items)) throw new TypeError("addBatch needs a list of texts or items");
    const { owner, session_id, agent_id, metadata } = options;
    const shared = { session_id, agent_id, metadata };
    const body = {
      ...(owner === undefined ? {} : { owner }),
      items: items.map((raw): BatchItem => {
        const item = typeof raw === "string" ? { content: raw } : { ...raw };
        const messages = typeof item.messages === "string" ? [{ role: "user" as const, content: item.messages }] : item.messages;
        const out: BatchItem = { ...item, messages };
        if (messages == null) delete out.messages;
        else out.event_id ??= crypto.randomUUID();
        for (const [name, value] of Object.entries(shared) as [keyof typeof shared, unknown][]) {
          if (value !== undefined && out[name] == null) (out as Record<string, unknown>)[name] = value;
        }
        return out;
      }),
    };
    // a 503 may come after some items were stored: repeat only when every item is a keyed upsert or an event
    const retryUnavailable = body.items.every((item) => item.key != null || item.messages != null);
    return (await this.#request(ROUTES.memories_batch, { body, retryUnavailable })) as Operations["memories_batch"]["result"];
  }

  /** One memory; `NotFound` when it does not exist for this owner. */
  async get(id: string): Promise<MemoryRecord> {
    const result = (await this.#request(ROUTES.memories_get, { path: { id } })) as Operations["memories_get"]["result"];
    return result.memory;
  }

  /** Memories with filters and pagination, newest first. */
  async list(options: ListOptions = {}): Promise<Operations["memories_list"]["result"]> {
    return (await this.#request(ROUTES.memories_list, { query: { ...options } })) as Operations["memories_list"]["result"];
  }

  /** Change a memory: only the fields given. */
  async update(id: string, fields: UpdateFields): Promise<Operations["memories_update"]["result"]> {
    const result = await this.#request(ROUTES.memories_update, { path: { id }, body: fields });
    return result as Operations["memories_update"]["result"];
  }

  /** Delete a memory from every store; the result says what was removed. */
  async delete(id: string): Promise<Operations["memories_delete"]["result"]> {
    return (await this.#request(ROUTES.memories_delete, { path: { id } })) as Operations["memories_delete"]["result"];
  }

  /** Delete the owner's memories (all, or of one agent, of one type, or older than some days). */
  async clear(options: ClearOptions = {}): Promise<Operations["memories_clear"]["result"]> {
    return (await this.#request(ROUTES.memories_clear, { body: options })) as Operations["memories_clear"]["result"];
  }

  /** Deep health of every service behind the gateway. */
  async health(): Promise<Operations["health"]["result"]> {
    return (await this.#request(ROUTES.health, {})) as Operations["health"]["result"];
  }

  async #request(route: Route, parts: Parts): Promise<unknown> {
    const url = this.#url(route.path, parts);
    const headers: Record<string, string> = { authorization: `Bearer ${this.#apiKey}`, accept: "application/json" };
    if (this.#owner) headers["x-memory-owner"] = this.#owner;
    if (parts.body !== undefined) headers["content-type"] = "application/json";
    const body = parts.body === undefined ? undefined : JSON.stringify(parts.body);
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        const signal = this.#timeoutMs > 0 ? AbortSignal.timeout(this.#timeoutMs) : undefined;
        response = await this.#fetch(url, { method: route.method, headers, body, signal });
      } catch (cause) {
        const error = new ConnectionFailed(`connection: ${route.method} ${url}: ${String(cause)}`, 0, "connection");
        error.cause = cause;
        throw error;
      }
      if (response.ok) return await response.json();
      const error = await this.#error(response);
      const retryAfterS = parseRetryAfter(response.headers.get("retry-after"));
      const retried = response.status !== 503 || parts.retryUnavailable !== false;
      const delay = retried ? retryDelayS(response.status, attempt, retryAfterS, this.#retry) : null;
      if (delay === null) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay * 1000));
    }
  }

  #url(template: string, parts: Parts): string {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = parts.path?.[name];
      if (!value) throw new TypeError(`${name} is required`);
      return encodeURIComponent(value);
    });
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(parts.query ?? {})) {
      if (value === undefined || value === null) continue;
      search.set(name, typeof value === "object" ? JSON.stringify(value) : String(value));
    }
    const query = search.size ? `?${search}` : "";
    return `${this.baseUrl}${path}${query}`;
  }

  async #error(response: Response): Promise<MemorydError> {
    const text = await response.text();
    const media = response.headers.get("content-type") ?? "";
    let problem: Problem | undefined;
    if (media.startsWith(PROBLEM_MEDIA) || media.startsWith("application/json")) {
      try {
        const parsed: unknown = JSON.parse(text);
        if (parsed && typeof parsed === "object" && typeof (parsed as Problem).err_code === "string") {
          problem = parsed as Problem;
        }
      } catch {}
    }
    const retryAfterS = parseRetryAfter(response.headers.get("retry-after"));
    return errorFromProblem(response.status, problem, retryAfterS, text.slice(0, 500) || response.statusText);
  }
}
