// Named error kinds. Callers decide on the kind (tell the user, retry), never on the message.
// Wrap the underlying error as `cause` so the chain survives into the logs.

/** The user must fix an input, the workflow or the repository. Never retried. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError'
}

export interface TransientErrorOptions extends ErrorOptions {
  /** How long the server asked us to wait (Retry-After), when it did. */
  readonly retryAfterMs?: number
  /** The server was not there: no connection, or a gateway's 502/503/504 in its place. */
  readonly unreachable?: boolean
}

/** Worth retrying as it is: timeouts, connection resets, 5xx, 429. */
export class TransientError extends Error {
  override readonly name = 'TransientError'
  readonly retryAfterMs: number | undefined
  readonly unreachable: boolean

  constructor(message: string, options?: TransientErrorOptions) {
    super(message, options)
    this.retryAfterMs = options?.retryAfterMs
    this.unreachable = options?.unreachable ?? false
  }
}

export interface GitErrorDetails {
  /** The command as run, e.g. `git diff --raw -z …` (it never carries secrets). */
  readonly command: string
  /** Undefined when git did not start or was killed by a signal. */
  readonly exitCode?: number
  /** First line of git's stderr, or what went wrong when there is none. */
  readonly detail: string
}

/** A git command failed, or printed something the reader does not understand. */
export class GitError extends Error {
  override readonly name = 'GitError'
  readonly command: string
  readonly exitCode: number | undefined
  readonly detail: string

  constructor(details: GitErrorDetails, options?: ErrorOptions) {
    const status = details.exitCode === undefined ? '' : ` (exit ${details.exitCode})`
    super(`${details.command} failed${status}: ${details.detail}`, options)
    this.command = details.command
    this.exitCode = details.exitCode
    this.detail = details.detail
  }
}

/** The message of anything thrown (libraries throw strings and plain objects too). */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  if (typeof error === 'object' && error !== null && 'message' in error && typeof error.message === 'string') return error.message
  return String(error)
}
