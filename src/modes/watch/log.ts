// Structured logs of the watch mode: one line per event, plain `key=value` text or one JSON
// object (time, level, msg, fields) that log pipelines parse without rules.

import { capped, jsonText, logLine } from '../../lib/untrusted.ts'
import type { LogFormat } from '../../settings.ts'
import type { Logger } from '../../engine/ports.ts'

export type Level = 'debug' | 'info' | 'warning' | 'error'
export type Fields = Readonly<Record<string, string | number | boolean | undefined>>

export interface EventLog extends Logger {
  event(level: Level, msg: string, fields?: Fields): void
}

export interface LogSink {
  /** One finished line, without the newline. */
  write(level: Level, line: string): void
}

/** Longest field value in a line. */
const MAX_FIELD = 2000

export function createEventLog(format: LogFormat, sink: LogSink, now: () => number = Date.now): EventLog {
  const event = (level: Level, msg: string, fields: Fields = {}): void => {
    // Field values quote the cluster (names, messages): capped, and quoted when not plain.
    const defined = Object.entries(fields)
      .filter((e): e is [string, string | number | boolean] => e[1] !== undefined)
      .map(([k, v]): [string, string | number | boolean] => [k, typeof v === 'string' ? capped(v, MAX_FIELD) : v])
    if (format === 'json') {
      sink.write(level, jsonText({ time: new Date(now()).toISOString(), level, msg, ...Object.fromEntries(defined) }))
      return
    }
    const rest = defined.map(([k, v]) => `${k}=${typeof v === 'string' && /[\s"=\p{C}]/u.test(v) ? jsonText(v) : String(v)}`).join(' ')
    const prefix = level === 'info' ? '' : `${level}: `
    sink.write(level, `${prefix}${msg}${rest === '' ? '' : ` ${rest}`}`)
  }
  return {
    event,
    info: (message) => event('info', message),
    warning: (message) => event('warning', message),
  }
}

/** stdout for everything but warnings and errors (stderr), as containers expect. */
export const processSink: LogSink = {
  write(level, line) {
    if (level === 'warning' || level === 'error') process.stderr.write(`${logLine(line)}\n`)
    else process.stdout.write(`${logLine(line)}\n`)
  },
}
