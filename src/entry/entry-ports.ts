// What differs between the action and the CLI: the modes are wired the same from these ports.

import type { GitReader } from '../git/reader.ts'
import type { Logger } from '../engine/ports.ts'
import type { Mode } from '../modes/mode.ts'
import type { RunContext } from '../modes/trigger/pipeline.ts'
import type { LogSink } from '../modes/watch/log.ts'
import type { Sandbox } from '../sandbox/sandbox.ts'

type Env = Readonly<Record<string, string | undefined>>

/** What differs between the action and the CLI; the modes are wired the same from these. */
export interface EntryPorts {
  /** The process environment: the kubeconfig's variables, GITHUB_*. */
  readonly env: Env
  /** The environment the GitHub report and trigger's repository URL read (the CLI's --github-repository is set in it). */
  readonly githubEnv: Env
  /** Hides a secret from the log (the action's setSecret). */
  readonly mask: (secret: string) => void
  readonly log: Logger
  readonly git: () => Promise<GitReader>
  /** The event and commit the run is about. */
  readonly context: RunContext
  /** The same, for a run that plans from the repository: the CLI resolves its HEAD there. */
  readonly contextAt: (git: () => Promise<GitReader>) => Promise<RunContext>
  /** Where watch mode's log lines go. */
  readonly watchSink: LogSink
  /** Where every render's builds run (the entry closes it). */
  readonly sandbox: Sandbox
}

export type EntryMode = Mode<EntryPorts>
