// The contract every mode meets: it runs, and hands back one ModeResult. The action publishes
// that result through one function (entry/publish.ts: annotations, outputs, job summary,
// fail-on) and the CLI prints it through one (entry/cli.ts: text or --json, exit code). Each
// mode's report file builds its ModeResult; nothing here decides.

import type { Severity } from '../core/model.ts'
import type { Settings } from '../settings.ts'

export type ModeName = Settings['mode']

/** One annotation on the job page; the publisher caps their number and makes the text plain. */
export interface Annotation {
  readonly severity: Severity
  readonly title: string
  readonly message: string
  readonly file?: string
  readonly line?: number
}

export interface ModeResult {
  /** The action log's first line, e.g. `helmrelease-trigger: 2 triggered, 0 skipped, 0 failed`. */
  readonly headline: string
  /** The action log's lines after the headline (a line per release, per finding…). */
  readonly log: readonly string[]
  /** The action's outputs, by name, already as the text GitHub stores (JSON or plain). */
  readonly outputs: Readonly<Record<string, string>>
  readonly annotations: readonly Annotation[]
  /** $GITHUB_STEP_SUMMARY */
  readonly summaryMarkdown: string
  /** The CLI's plain-text report; '' prints nothing. */
  readonly text: string
  /** The CLI's --json document; undefined prints nothing. */
  readonly json: unknown
  /** Why the run fails (fail-on, drift-action: fail, a fleet's failed clusters); undefined: it passes. */
  readonly failure: string | undefined
}

/** A mode as the entries run it: the ports are what differs between the action and the CLI. */
export interface Mode<Ports> {
  readonly name: ModeName
  run(settings: Settings, ports: Ports): Promise<ModeResult>
}
