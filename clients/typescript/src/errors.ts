/**
 * One error root for memoryd, mirroring the Python tree (`memoryd.errors`). The gateway answers
 * every error as application/problem+json with `status`, `err_code`, `detail` and, for a
 * validation error, the offending `field`; `errorFromProblem` turns that into one of these.
 *
 * MemorydError                 base
 * ├── ValidationFailed    400  `field`: the JSON path of the offending field (`$.content`)
 * ├── Unauthorized        401  no API key, or an unknown or revoked one
 * ├── Forbidden           403  the key may not do this (another owner, an operator route)
 * ├── NotFound            404  the memory does not exist for this owner
 * ├── Conflict            409  the request contradicts current state
 * ├── TooLarge            413  a payload or field is over its limit
 * ├── BudgetExceeded      429  a per-owner budget is spent
 * │   ├── RateLimited     429  `retryAfterS`: when a request fits again
 * │   └── QuotaExceeded   429  a per-owner quota is full
 * ├── DependencyDown      503  NATS or a service behind the gateway is down
 * ├── ConnectionFailed         the gateway could not be reached (or timed out)
 * └── RemoteError         5xx  anything else; `errorId` finds it in the gateway's log
 */

import type { Problem } from "./openapi.js";

export class MemorydError extends Error {
  /** The HTTP status (0 when no response arrived). */
  readonly status: number;
  /** The gateway's `err_code` (`validation`, `not_found`, ...). */
  readonly errCode: string;
  /** The problem document as received, when there was one. */
  readonly problem: Problem | undefined;

  constructor(message: string, status: number, errCode: string, problem?: Problem) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.errCode = errCode;
    this.problem = problem;
  }
}

export class ValidationFailed extends MemorydError {
  /** The JSON path of the offending field, when one is known. */
  readonly field: string | null;

  constructor(message: string, status: number, errCode: string, problem?: Problem) {
    super(message, status, errCode, problem);
    this.field = problem?.field ?? null;
  }
}

export class Unauthorized extends MemorydError {}
export class Forbidden extends MemorydError {}
export class NotFound extends MemorydError {}
export class Conflict extends MemorydError {}
export class TooLarge extends MemorydError {}
export class BudgetExceeded extends MemorydError {}

export class RateLimited extends BudgetExceeded {
  /** Seconds until a request fits again (the `Retry-After` header), when the gateway says. */
  retryAfterS: number | null = null;
}

export class QuotaExceeded extends BudgetExceeded {}
export class DependencyDown extends MemorydError {}
export class ConnectionFailed extends MemorydError {}

export class RemoteError extends MemorydError {
  /** Finds the full error in the gateway's log. */
  readonly errorId: string | null;

  constructor(message: string, status: number, errCode: string, problem?: Problem) {
    super(message, status, errCode, problem);
    this.errorId = problem?.error_id ?? null;
  }
}

type ErrorClass = new (message: string, status: number, errCode: string, problem?: Problem) => MemorydError;

const BY_ERR_CODE: Record<string, ErrorClass> = {
  validation: ValidationFailed,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  not_found: NotFound,
  conflict: Conflict,
  too_large: TooLarge,
  budget_exceeded: BudgetExceeded,
  rate_limited: RateLimited,
  quota_exceeded: QuotaExceeded,
  dependency_down: DependencyDown,
  secret_unavailable: DependencyDown,
};

const BY_STATUS: Record<number, ErrorClass> = {
  400: ValidationFailed,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: TooLarge,
  422: ValidationFailed,
  429: BudgetExceeded,
  503: DependencyDown,
};

/** The typed error for a failed response: by `err_code`, else by status. */
export function errorFromProblem(
  status: number,
  problem: Problem | undefined,
  retryAfterS: number | null,
  fallbackDetail: string,
): MemorydError {
  const errCode = problem?.err_code ?? `http_${status}`;
  const Class = BY_ERR_CODE[errCode] ?? BY_STATUS[status] ?? RemoteError;
  const detail = problem?.detail ?? fallbackDetail;
  const error = new Class(`${errCode}: ${detail}`, status, errCode, problem);
  if (error instanceof RateLimited) error.retryAfterS = retryAfterS;
  return error;
}
