/**
 * When to try a request again: only on 429 and 503, a bounded number of times, after the
 * gateway's `Retry-After` when it sends one (else a doubling backoff), and never for longer
 * than `maxDelayS` at a time. Pure functions; the client does the waiting.
 */

export interface RetryPolicy {
  /** Retries after the first attempt (0: none). */
  maxRetries: number;
  /** The longest wait before one retry; a longer `Retry-After` is returned to the caller as an error. */
  maxDelayS: number;
  /** The first wait when the gateway sends no `Retry-After`; doubled for each further retry. */
  baseDelayS: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 2, maxDelayS: 10, baseDelayS: 0.5 };

export const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** `Retry-After` as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null || value.trim() === "") return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}

/** Seconds to wait before retry number `attempt + 1`, or null when the request is not retried. */
export function retryDelayS(
  status: number,
  attempt: number,
  retryAfterS: number | null,
  policy: RetryPolicy,
): number | null {
  if (!RETRIED_STATUSES.has(status) || attempt >= policy.maxRetries) return null;
  const delay = retryAfterS ?? policy.baseDelayS * 2 ** attempt;
  return delay > policy.maxDelayS ? null : delay;
}
