// `npm run cluster -- up [--flux] [--apiserver-port N] | down | status`
//
// `up` starts the local cluster (test/support/cluster.ts) in a detached supervisor
// process that owns every cluster process, waits until it is ready and prints
// `export KUBECONFIG=…` on stdout (progress goes to stderr). `down` stops it and
// makes sure no process of ours is left. Everything lives in .cluster/.

import { spawn } from 'node:child_process'
import { existsSync, openSync, closeSync } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { REPO_ROOT, formatMs, logTail, startCluster, type LocalCluster } from './cluster.ts'
import { isAlive, isSupervisor, readClusterState, statePath, type ClusterState } from './cluster-state.ts'

const DIR = join(REPO_ROOT, '.cluster')
const SUPERVISOR_LOG = join(DIR, 'logs', 'supervisor.log')
const SUPERVISOR_PID = join(DIR, 'supervisor.pid')
// A cold build of the binaries takes many minutes on a small machine.
const UP_TIMEOUT_MS = 60 * 60_000
const DOWN_GRACE_MS = 30_000

const USAGE = `usage: npm run cluster -- <command>
  up [--flux] [--apiserver-port N]  start the local cluster in the background (Flux's source-, helm- and
                                    kustomize-controller with --flux)
  down                              stop it; no process is left behind
  status                            say whether it runs, and where`

interface UpOptions {
  readonly flux: boolean
  readonly apiserverPort?: number
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'up':
      return up(parseUpOptions(rest))
    case 'down':
      return down()
    case 'status':
      return status()
    case '__supervise':
      return supervise(parseUpOptions(rest))
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(`${USAGE}\n`)
      return command === undefined ? 2 : 0
    default:
      throw new UsageError(`unknown command '${command}'`)
  }
}

class UsageError extends Error {
  override name = 'UsageError'
}

function parseUpOptions(args: readonly string[]): UpOptions {
  let flux = false
  let apiserverPort: number | undefined
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ''
    if (arg === '--flux') flux = true
    else if (arg === '--apiserver-port' || arg.startsWith('--apiserver-port=')) {
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[++i]
      apiserverPort = Number(value)
      if (!Number.isInteger(apiserverPort) || apiserverPort < 1 || apiserverPort > 65535) {
        throw new UsageError(`--apiserver-port needs a port number, got '${value ?? ''}'`)
      }
    } else throw new UsageError(`unknown option '${arg}'`)
  }
  return apiserverPort === undefined ? { flux } : { flux, apiserverPort }
}

// --- up ----------------------------------------------------------------------------

async function up(options: UpOptions): Promise<number> {
  const running = await runningState()
  if (running) {
    if (options.flux && !running.flux) {
      process.stderr.write('cluster: a cluster without Flux is running; run `npm run cluster -- down` first\n')
      return 1
    }
    process.stderr.write(`cluster: already running (supervisor pid ${running.supervisorPid}, ${running.server})\n`)
    process.stdout.write(`export KUBECONFIG=${running.kubeconfigPath}\n`)
    return 0
  }
  if (await supervisorPid()) {
    process.stderr.write('cluster: a cluster is still starting or stopping; run `npm run cluster -- down` first\n')
    return 1
  }
  await cleanupStale()

  await mkdir(join(DIR, 'logs'), { recursive: true })
  const fd = openSync(SUPERVISOR_LOG, 'w')
  const args = ['--experimental-strip-types', fileURLToPath(import.meta.url), '__supervise']
  if (options.flux) args.push('--flux')
  if (options.apiserverPort !== undefined) args.push(`--apiserver-port=${options.apiserverPort}`)
  // Detached (own session) so it outlives this command and the terminal.
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', fd, fd], cwd: REPO_ROOT })
  closeSync(fd)
  const pid = child.pid
  if (pid === undefined) throw new Error('cannot start the cluster supervisor')
  await writeFile(SUPERVISOR_PID, `${pid}\n`)
  let exited: number | null | undefined
  child.once('exit', (code) => (exited = code))
  child.unref()

  const started = Date.now()
  const follower = followLog(SUPERVISOR_LOG)
  try {
    while (Date.now() - started < UP_TIMEOUT_MS) {
      await follower.flush()
      const state = await readClusterState(DIR)
      if (state?.supervisorPid === pid) {
        process.stderr.write(`cluster: ready in ${formatMs(Date.now() - started)}; logs in ${join(DIR, 'logs')}\n`)
        process.stdout.write(`export KUBECONFIG=${state.kubeconfigPath}\n`)
        return 0
      }
      if (exited !== undefined) {
        await follower.flush()
        process.stderr.write(`cluster: failed to start (supervisor exited with ${exited}); see ${SUPERVISOR_LOG}\n`)
        await rm(SUPERVISOR_PID, { force: true })
        return 1
      }
      await sleep(300)
    }
    process.stderr.write(`cluster: not ready within ${UP_TIMEOUT_MS / 60_000} min; stopping it. Last lines of ${SUPERVISOR_LOG}:\n`)
    process.stderr.write(`${await logTail(SUPERVISOR_LOG)}\n`)
    await down()
    return 1
  } finally {
    follower.stop()
  }
}

// Copies lines the supervisor appends to its log onto our stderr.
function followLog(path: string): { flush(): Promise<void>; stop(): void } {
  let offset = 0
  let stopped = false
  return {
    async flush() {
      if (stopped) return
      let text: Buffer
      try {
        text = await readFile(path)
      } catch {
        return
      }
      if (text.length > offset) {
        process.stderr.write(text.subarray(offset))
        offset = text.length
      }
    },
    stop() {
      stopped = true
    },
  }
}

// --- supervisor --------------------------------------------------------------------

async function supervise(options: UpOptions): Promise<number> {
  const log = (line: string): void => {
    process.stdout.write(`${new Date().toISOString()} ${line}\n`)
  }
  let cluster: LocalCluster | undefined
  let stopping = false
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return
    stopping = true
    log(`${signal}: stopping the cluster`)
    await rm(statePath(DIR), { force: true })
    await cluster?.stop()
    await rm(join(DIR, 'kubeconfig'), { force: true })
    await rm(SUPERVISOR_PID, { force: true })
    log('cluster stopped')
    process.exit(0)
  }
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void stop(signal))

  try {
    cluster = await startCluster({
      flux: options.flux,
      dir: DIR,
      log,
      handleSignals: false,
      ...(options.apiserverPort === undefined ? {} : { ports: { apiserver: options.apiserverPort } }),
    })
  } catch (error) {
    log(`cluster failed to start: ${error instanceof Error ? error.message : String(error)}`)
    await rm(SUPERVISOR_PID, { force: true })
    return 1
  }
  if (stopping) return 0

  const state: ClusterState = {
    supervisorPid: process.pid,
    startedAt: new Date().toISOString(),
    flux: cluster.flux,
    dir: cluster.dir,
    kubeconfigPath: cluster.kubeconfigPath,
    server: cluster.server,
    adminToken: cluster.adminToken,
    caData: cluster.caData,
    chartRepoUrl: cluster.chartRepoUrl,
    gitServerUrl: cluster.gitServerUrl,
    ociRegistryUrl: cluster.ociRegistryUrl,
    versions: cluster.versions,
    ports: cluster.ports,
    processes: cluster.processes,
    timings: cluster.timings,
  }
  const tmp = `${statePath(DIR)}.tmp`
  await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 })
  await rename(tmp, statePath(DIR))
  log(`state written to ${statePath(DIR)}; chart repository ${cluster.chartRepoUrl}; git server ${cluster.gitServerUrl}`)
  // The chart server and the children keep the event loop alive until a signal stops us.
  return new Promise<number>(() => {})
}

// --- down / status -----------------------------------------------------------------

async function down(): Promise<number> {
  const state = await readClusterState(DIR)
  const pid = state && isSupervisor(state.supervisorPid) ? state.supervisorPid : await supervisorPid()
  if (pid === undefined) {
    const leftovers = await cleanupStale()
    process.stderr.write(leftovers > 0 ? `cluster: killed ${leftovers} leftover process(es)\n` : 'cluster: not running\n')
    return 0
  }
  process.stderr.write(`cluster: stopping (supervisor pid ${pid})\n`)
  process.kill(pid, 'SIGTERM')
  const deadline = Date.now() + DOWN_GRACE_MS
  while (isAlive(pid) && Date.now() < deadline) await sleep(200)
  if (isAlive(pid)) {
    // Its children die with it (pdeathsig).
    process.stderr.write(`cluster: supervisor still running after ${DOWN_GRACE_MS / 1000}s; killing it\n`)
    process.kill(pid, 'SIGKILL')
    while (isAlive(pid)) await sleep(100)
  }
  const leftovers = await cleanupStale(state)
  process.stderr.write(`cluster: stopped${leftovers > 0 ? ` (killed ${leftovers} leftover process(es))` : ''}\n`)
  return 0
}

async function status(): Promise<number> {
  const state = await runningState()
  if (!state) {
    process.stdout.write('cluster: not running\n')
    return 1
  }
  const lines = [
    `cluster: running since ${state.startedAt} (supervisor pid ${state.supervisorPid})`,
    `  server:      ${state.server} (Kubernetes ${state.versions.kubernetes})`,
    `  kubeconfig:  ${state.kubeconfigPath}`,
    `  charts:      ${state.chartRepoUrl}`,
    `  git:         ${state.gitServerUrl} (POST /-/repos/<name> creates <name>.git)`,
    ...(state.ociRegistryUrl === undefined
      ? []
      : [`  oci:         ${state.ociRegistryUrl} (charts as oci://${new URL(state.ociRegistryUrl).host}/<name>:<version>)`]),
    `  flux:        ${
      state.flux
        ? `source-controller ${state.versions.sourceController}, helm-controller ${state.versions.helmController} (Helm ${state.versions.helm}), kustomize-controller ${state.versions.kustomizeController}`
        : 'no'
    }`,
    ...state.processes.map((p) => `  ${p.name.padEnd(20)} pid ${p.pid} ${isAlive(p.pid) ? 'running' : 'EXITED'} (log ${p.logPath})`),
  ]
  process.stdout.write(`${lines.join('\n')}\n`)
  return 0
}

async function runningState(): Promise<ClusterState | undefined> {
  const state = await readClusterState(DIR)
  return state && isSupervisor(state.supervisorPid) ? state : undefined
}

async function supervisorPid(): Promise<number | undefined> {
  try {
    const pid = Number((await readFile(SUPERVISOR_PID, 'utf8')).trim())
    return Number.isInteger(pid) && pid > 0 && isSupervisor(pid) ? pid : undefined
  } catch {
    return undefined
  }
}

/** Kills recorded cluster processes still alive (checking it is still our binary) and removes the state. */
async function cleanupStale(state?: ClusterState): Promise<number> {
  const recorded = state ?? (await readClusterState(DIR))
  let killed = 0
  for (const p of recorded?.processes ?? []) {
    if (isAlive(p.pid) && (await commandLine(p.pid)).includes(p.name)) {
      process.kill(p.pid, 'SIGKILL')
      killed++
    }
  }
  await rm(statePath(DIR), { force: true })
  await rm(join(DIR, 'kubeconfig'), { force: true })
  await rm(SUPERVISOR_PID, { force: true })
  if (existsSync(join(DIR, 'data'))) await rm(join(DIR, 'data'), { recursive: true, force: true })
  return killed
}

async function commandLine(pid: number): Promise<string> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ')
  } catch {
    return ''
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`cluster: ${error.message}\n${USAGE}\n`)
    else process.stderr.write(`cluster: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(error instanceof UsageError ? 2 : 1)
  },
)
