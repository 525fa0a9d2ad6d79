// Where kustomize processes are started from. Spawning forks the Node process, which costs the
// main thread about 15 ms a build once a render has parsed a few hundred objects (a full
// re-render of 51 Kustomizations spent 0.8 s there, a fifth of its time). A lane is a small
// long-lived shell that starts the builds instead, one at a time: it forks in well under a
// millisecond. Each build's output goes to a file in the lane's own directory; the shell answers
// with the exit status. Lanes start on demand (the caller bounds the concurrency) and end after
// a moment idle, never holding the process open.

import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export type LaneOutcome =
  | { readonly kind: 'exited'; readonly code: number; readonly output: string; readonly errors: string }
  | { readonly kind: 'overflow' }
  | { readonly kind: 'failed'; readonly error: string }

/** How long an idle lane waits for the next build before its shell exits. */
const IDLE_MS = 200

/**
 * The shell loop: read the output file and the directory, one line each, run the command with
 * the directory appended, answer with the status. `ulimit -f` (blocks of 512 or 1024 bytes,
 * whichever the shell uses; the caller checks the exact size) stops a runaway output filling
 * the disk. The shell removes its directory when its input ends, which is also when the Node
 * process exits with the lane idle.
 */
const LOOP =
  'ulimit -f "$LANE_BLOCKS" 2>/dev/null; while IFS= read -r out && IFS= read -r dir; do "$@" "$dir" >"$out" 2>"$out.err" </dev/null; echo "$?"; done; rm -rf "$LANE_DIR"'

interface Refable {
  ref(): unknown
  unref(): unknown
}

export class BuildLanes {
  private readonly idle: Lane[] = []
  private readonly command: readonly string[]
  private readonly env: NodeJS.ProcessEnv
  private readonly outputLimit: number

  constructor(command: readonly string[], env: NodeJS.ProcessEnv, outputLimit: number) {
    this.command = command
    this.env = env
    this.outputLimit = outputLimit
  }

  /** Whether `directory` can travel as one line to a lane; other paths are spawned directly. */
  static carries(directory: string): boolean {
    return process.platform !== 'win32' && !/[\r\n]/.test(directory)
  }

  async run(directory: string, signal: AbortSignal | undefined): Promise<LaneOutcome> {
    let lane = this.idle.pop()
    while (lane !== undefined && !lane.alive) lane = this.idle.pop()
    lane ??= new Lane(this.command, this.env, this.outputLimit)
    const outcome = await lane.run(directory, signal)
    if (lane.alive) {
      const idle = lane
      this.idle.push(idle)
      idle.idleFor(IDLE_MS, () => {
        const at = this.idle.indexOf(idle)
        if (at >= 0) this.idle.splice(at, 1)
      })
    }
    return outcome
  }
}

class Lane {
  alive = true
  private readonly shell: ChildProcess
  private readonly dir: string
  private readonly lines: string[] = []
  private waiting: ((line: string | undefined) => void) | undefined
  private timer: NodeJS.Timeout | undefined
  private sequence = 0
  private readonly outputLimit: number

  constructor(command: readonly string[], env: NodeJS.ProcessEnv, outputLimit: number) {
    this.outputLimit = outputLimit
    this.dir = mkdtempSync(join(tmpdir(), 'hrt-kustomize-'))
    const blocks = String(Math.ceil(outputLimit / 512) + 1)
    // Its own process group, so an abort can stop the shell and the build it started.
    this.shell = spawn('/bin/sh', ['-c', LOOP, 'lane', ...command], {
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { ...env, LANE_BLOCKS: blocks, LANE_DIR: this.dir },
      detached: true,
    })
    let partial = ''
    this.shell.stdout?.setEncoding('utf8')
    this.shell.stdout?.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n')
      partial = parts.pop() ?? ''
      for (const line of parts) this.deliver(line)
    })
    const end = (): void => {
      this.alive = false
      this.deliver(undefined)
      rmSync(this.dir, { recursive: true, force: true })
    }
    this.shell.on('error', end)
    this.shell.on('close', end)
    this.shell.stdin?.on('error', () => {})
  }

  async run(directory: string, signal: AbortSignal | undefined): Promise<LaneOutcome> {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.hold(true)
    const out = join(this.dir, `build-${this.sequence++}`)
    const abort = (): void => this.stop()
    signal?.addEventListener('abort', abort, { once: true })
    try {
      if (signal?.aborted) return { kind: 'failed', error: 'the build was cancelled' }
      this.shell.stdin?.write(`${out}\n${directory}\n`)
      const status = await this.nextLine()
      if (status === undefined) return { kind: 'failed', error: signal?.aborted ? 'the build was cancelled' : 'the shell that starts kustomize exited' }
      try {
        if ((await stat(out)).size > this.outputLimit) return { kind: 'overflow' }
        const [output, errors] = await Promise.all([readFile(out, 'utf8'), readFile(`${out}.err`, 'utf8')])
        return { kind: 'exited', code: Number(status), output, errors }
      } finally {
        rmSync(out, { force: true })
        rmSync(`${out}.err`, { force: true })
      }
    } finally {
      signal?.removeEventListener('abort', abort)
      this.hold(false)
    }
  }

  /** Ends the shell after `ms` without work; `onEnd` takes the lane out of the idle list. */
  idleFor(ms: number, onEnd: () => void): void {
    this.timer = setTimeout(() => {
      onEnd()
      this.shell.stdin?.end()
    }, ms)
    this.timer.unref()
  }

  private stop(): void {
    if (this.shell.pid !== undefined) {
      try {
        process.kill(-this.shell.pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  }

  /** While a build runs the shell keeps the process alive; idle, it does not. */
  private hold(on: boolean): void {
    // The pipes are sockets, which can be unref'd like the child itself.
    const handles = [this.shell, this.shell.stdin, this.shell.stdout] as readonly (Partial<Refable> | null)[]
    for (const h of handles) {
      if (on) h?.ref?.()
      else h?.unref?.()
    }
  }

  private nextLine(): Promise<string | undefined> {
    const ready = this.lines.shift()
    if (ready !== undefined) return Promise.resolve(ready)
    if (!this.alive) return Promise.resolve(undefined)
    return new Promise((resolve) => (this.waiting = resolve))
  }

  private deliver(line: string | undefined): void {
    const waiting = this.waiting
    if (waiting !== undefined) {
      this.waiting = undefined
      waiting(line)
    } else if (line !== undefined) this.lines.push(line)
  }
}
