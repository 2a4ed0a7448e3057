/** memoryd's TypeScript client: `new MemoryClient({ baseUrl, apiKey })`, its typed errors and wire types. */

export { MemoryClient } from "./client.js";
export type {
  AddOptions,
  BatchItemLike,
  BatchOptions,
  ClearOptions,
  CreateOptions,
  ListOptions,
  MemoryClientOptions,
  SearchOptions,
  UpdateFields,
} from "./client.js";
export * from "./errors.js";
export type * from "./openapi.js";
export { ROUTES } from "./openapi.js";
export { DEFAULT_RETRY, type RetryPolicy, parseRetryAfter, retryDelayS } from "./retry.js";
