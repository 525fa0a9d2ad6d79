// Scenario 6 — Action start: from spawning `node dist/index.js` (a push event changing one
// labelled ConfigMap, the action's defaults) to its first connection to the apiserver, against
// `node -e ''` (start and exit) and a bare `node -e` that connects (start and first connection)
// as floors; and the size of the bundles. The bundle is built from the current sources into a
// temporary directory, so the figures never describe a stale dist/.

import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { createRepo } from '../test/support/repo.ts'
import { triggerConfigMap } from '../test/support/manifests.ts'
import { fig, median, ms, now, quantile, ratio, runOk, type Figure, type ScenarioResult } from './lib.ts'

export interface StartOptions {
  /** Processes timed per measurement. */
  readonly samples: number
  readonly log: (line: string) => void
}

export interface BundleSize {
  readonly file: string
  readonly size: Figure
  readonly gzip: Figure
}

export interface StartRow {
  readonly samples: number
  /** Spawn → first connection to the apiserver. */
  readonly action: { readonly median: Figure; readonly p95: Figure; readonly runs: readonly Figure[] }
  /** `node -e ''`: spawn → exit. */
  readonly nodeEmpty: { readonly median: Figure; readonly runs: readonly Figure[] }
  /** `node -e` opening a connection: spawn → the connection. */
  readonly nodeConnect: { readonly median: Figure; readonly runs: readonly Figure[] }
  /** action.median / nodeConnect.median */
  readonly ratio: Figure
  readonly bundles: readonly BundleSize[]
}

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const TIMEOUT_MS = 60_000

export async function startScenario(options: StartOptions): Promise<ScenarioResult<StartRow>> {
  const dist = await mkdtemp(join(tmpdir(), 'hrt-bench-dist-'))
  const repo = createRepo('hrt-bench-start-')
  const apiserver = await listen()
  try {
    await runOk(process.execPath, [join(REPO_ROOT, 'scripts', 'bundle.mjs'), dist], { cwd: REPO_ROOT, timeoutMs: 5 * 60_000 })
    const bundles = await Promise.all(['index.js', 'cli.js', 'parse-worker.js'].map((file) => bundleSize(dist, file)))
    const manifest = (replicas: number): string => triggerConfigMap({ name: 'app-values', namespace: 'apps', releases: 'app', values: `replicas: ${replicas}` })
    repo.write({ 'apps/values.yaml': manifest(1) })
    const before = repo.commit('values 1')
    repo.write({ 'apps/values.yaml': manifest(2) })
    const after = repo.commit('values 2')
    const runner = await mkdtemp(join(tmpdir(), 'hrt-bench-runner-'))
    try {
      const event = join(runner, 'event.json')
      await writeFile(event, JSON.stringify({ before, after, ref: 'refs/heads/main' }))
      await writeFile(join(runner, 'output'), '')
      await writeFile(join(runner, 'summary.md'), '')
      const env: Record<string, string> = {
        PATH: process.env['PATH'] ?? '',
        HOME: runner,
        GITHUB_ACTIONS: 'true',
        GITHUB_EVENT_NAME: 'push',
        GITHUB_EVENT_PATH: event,
        GITHUB_WORKSPACE: repo.dir,
        GITHUB_SHA: after,
        GITHUB_OUTPUT: join(runner, 'output'),
        GITHUB_STEP_SUMMARY: join(runner, 'summary.md'),
        GITHUB_SERVER_URL: 'https://github.example',
        GITHUB_REPOSITORY: 'acme/fleet',
        GITHUB_RUN_ID: '1',
        RUNNER_TEMP: runner,
        INPUT_KUBECONFIG: kubeconfig(apiserver.port),
      }
      const action: number[] = []
      const nodeEmpty: number[] = []
      const nodeConnect: number[] = []
      const connectScript = `require('node:net').connect(${apiserver.port}, '127.0.0.1').on('error', () => {})`
      // Interleaved, so a busy moment of the machine weighs on all three alike.
      for (let i = 0; i < options.samples; i++) {
        action.push(await untilConnected(apiserver, [join(dist, 'index.js')], repo.dir, env))
        nodeEmpty.push(await untilExit(['-e', ''], repo.dir))
        nodeConnect.push(await untilConnected(apiserver, ['-e', connectScript], repo.dir, env))
      }
      const row: StartRow = {
        samples: options.samples,
        action: { median: fig(median(action), 'ms'), p95: fig(quantile(action, 0.95), 'ms'), runs: action.map((v) => fig(v, 'ms')) },
        nodeEmpty: { median: fig(median(nodeEmpty), 'ms'), runs: nodeEmpty.map((v) => fig(v, 'ms')) },
        nodeConnect: { median: fig(median(nodeConnect), 'ms'), runs: nodeConnect.map((v) => fig(v, 'ms')) },
        ratio: fig(median(action) / median(nodeConnect), 'ours/floor'),
        bundles,
      }
      options.log(
        `start: action ${ms(row.action.median.value)} to its first connection, node -e '' ${ms(row.nodeEmpty.median.value)}, node connecting ${ms(row.nodeConnect.median.value)}`,
      )
      return summarize(row)
    } finally {
      await rm(runner, { recursive: true, force: true })
    }
  } finally {
    apiserver.close()
    repo.cleanup()
    await rm(dist, { recursive: true, force: true })
  }
}

async function bundleSize(dir: string, file: string): Promise<BundleSize> {
  const bytes = await readFile(join(dir, file))
  return { file, size: fig((await stat(join(dir, file))).size / 1024, 'KiB'), gzip: fig(gzipSync(bytes).length / 1024, 'KiB') }
}

/** A kubeconfig whose apiserver is the bench's listener (it never answers: only the connection is timed). */
function kubeconfig(port: number): string {
  return `apiVersion: v1
kind: Config
clusters:
  - name: bench
    cluster: { server: 'https://127.0.0.1:${port}', insecure-skip-tls-verify: true }
users:
  - name: bench
    user: { token: bench }
contexts:
  - name: bench
    context: { cluster: bench, user: bench }
current-context: bench
`
}

interface Listener {
  readonly port: number
  /** Resolves at the next connection. */
  next(): Promise<number>
  close(): void
}

/** A loopback TCP listener standing in for the apiserver: it notes each connection's time and drops it. */
async function listen(): Promise<Listener> {
  const waiting: ((at: number) => void)[] = []
  const server: Server = createServer((socket: Socket) => {
    const at = now()
    socket.destroy()
    waiting.shift()?.(at)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    port,
    next: () => new Promise((resolve) => waiting.push(resolve)),
    close: () => server.close(),
  }
}

/** Spawn → the process's first connection to the listener; the process is then killed. */
async function untilConnected(listener: Listener, args: readonly string[], cwd: string, env: Record<string, string>): Promise<number> {
  const connected = listener.next()
  const t0 = now()
  const child = spawn(process.execPath, args, { cwd, env, stdio: 'ignore' })
  const exited = new Promise<number>((resolve) => child.on('exit', () => resolve(-1)))
  const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS)
  try {
    const at = await Promise.race([connected, exited])
    if (at < 0) throw new Error(`node ${args.join(' ').slice(0, 80)} exited before connecting`)
    return at - t0
  } finally {
    clearTimeout(timer)
    child.kill('SIGKILL')
    await exited
  }
}

async function untilExit(args: readonly string[], cwd: string): Promise<number> {
  const t0 = now()
  const child = spawn(process.execPath, args, { cwd, stdio: 'ignore' })
  await new Promise((resolve) => child.on('exit', resolve))
  return now() - t0
}

function summarize(row: StartRow): ScenarioResult<StartRow> {
  const columns = ['measure', 'median', 'p95 / size (gzip)']
  const table = [
    ['node dist/index.js → first apiserver connection', ms(row.action.median.value), ms(row.action.p95.value)],
    ["floor: node -e '' (start → exit)", ms(row.nodeEmpty.median.value), '–'],
    ['floor: node -e connecting (start → connection)', ms(row.nodeConnect.median.value), '–'],
    ['ours ÷ connecting floor', ratio(row.ratio.value), '–'],
    ...row.bundles.map((b) => [`bundle ${b.file}`, '–', `${b.size.value.toFixed(0)} KiB (${b.gzip.value.toFixed(0)} KiB)`]),
  ]
  const notes = [
    `${row.samples} processes each, interleaved. The action runs on a push event that changes one labelled ConfigMap (git range, plan, kubeconfig, then its first request: discovery's LIST); the "apiserver" is a loopback listener that notes the connection and drops it, so TLS and the request itself are not in the figure.`,
    'Bundles built from the current sources (node scripts/bundle.mjs into a temporary directory); parse-worker.js is loaded only by large plans (about 2,000 changed files or more).',
  ]
  return { title: 'Action start: node dist/index.js to its first API request', columns, table, rows: [row], targets: [], notes }
}
