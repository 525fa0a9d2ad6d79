// A real local Kubernetes cluster for tests, the demo and benchmarks: etcd and
// kube-apiserver (RBAC on) built from Go modules by test/cluster/build.sh, the Flux
// CRDs from the Flux Go modules, optionally the real source-controller,
// helm-controller and kustomize-controller with an OCI registry for their OCIRepositories,
// a Helm chart repository and a git server (smart HTTP) served on loopback.
//
// Every process is a child of the caller started through `setpriv --pdeathsig KILL`,
// so even a hard-killed caller leaves none behind.

import { spawn, type ChildProcess } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { existsSync, openSync, closeSync, rmSync } from 'node:fs'
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { createServer, type AddressInfo, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ApiextensionsV1Api, loadAllYaml, type KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { demoChart, startChartServer, type ChartSpec, type PublishedChart } from './chart.ts'
import { startGitServer } from './git-server.ts'
import {
  SERVICE_ACCOUNT_ISSUER,
  createNamespace,
  errorMessage,
  isApiStatus,
  serviceAccountToken,
  sleep,
  waitFor,
  writeKubeconfig,
  type TokenOptions,
} from './kube.ts'

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const CLUSTER_SRC = join(REPO_ROOT, 'test', 'cluster')
const BUILD_SCRIPT = join(CLUSTER_SRC, 'build.sh')

export type BuildTarget = 'kube' | 'source-controller' | 'helm-controller' | 'kustomize-controller' | 'registry' | 'kustomize' | 'helm' | 'sops' | 'act'
/** The cluster's processes. */
export type BinaryName = 'etcd' | 'kube-apiserver' | 'source-controller' | 'helm-controller' | 'kustomize-controller' | 'oci-registry'
/** Everything build.sh builds: the processes and the tools tests run (kustomize, helm, sops, age-keygen, act). */
export type BuiltBinary = BinaryName | 'kustomize' | 'helm' | 'sops' | 'age-keygen' | 'act'
const BUILT_BINARIES = [
  'etcd',
  'kube-apiserver',
  'source-controller',
  'helm-controller',
  'kustomize-controller',
  'oci-registry',
  'kustomize',
  'helm',
  'sops',
  'age-keygen',
  'act',
] as const satisfies readonly BuiltBinary[]

export interface Ports {
  readonly etcdClient: number
  readonly etcdPeer: number
  readonly apiserver: number
  readonly chartRepo: number
  readonly gitServer: number
  readonly sourceStorage: number
  readonly sourceMetrics: number
  readonly sourceHealth: number
  readonly helmMetrics: number
  readonly helmHealth: number
  readonly kustomizeMetrics: number
  readonly kustomizeHealth: number
  readonly ociRegistry: number
}

export interface Versions {
  readonly kubernetes: string
  readonly etcd: string
  readonly sourceController: string
  readonly helmController: string
  readonly kustomizeController: string
  /** The Helm library helm-controller is built on, e.g. v4.2.4. */
  readonly helm: string
}

/** Which Flux the controllers are: unset, the default (test/cluster/<controller>); else `flux-<version>/<controller>`. */
export const FLUX_ENV = 'HELMRELEASE_TRIGGER_FLUX'

/** The wrapper module of a Flux controller for the Flux chosen by FLUX_ENV. */
export function controllerWrapper(controller: 'source-controller' | 'helm-controller' | 'kustomize-controller'): string {
  const flux = process.env[FLUX_ENV]
  return flux ? `flux-${flux}/${controller}` : controller
}

export interface StartClusterOptions {
  /** Also run source-controller, helm-controller, kustomize-controller and the OCI registry. */
  readonly flux?: boolean
  /** With `flux`: also build and run the OCI registry (default true); the demo serves its chart over HTTP only. */
  readonly ociRegistry?: boolean
  /**
   * Working directory: kubeconfig, logs/, data/. Kept after stop() except data/.
   * Default: a fresh temp directory, removed by stop().
   */
  readonly dir?: string
  /** Progress lines (build output, readiness, timings). */
  readonly log?: (line: string) => void
  /** Fixed ports; every other one is picked free on 127.0.0.1. */
  readonly ports?: Partial<Ports>
  /** Charts the repository serves from the start; default the `demo` chart 0.1.0. */
  readonly charts?: readonly ChartSpec[]
  /** helm-controller's `--feature-gates` (e.g. `CancelHealthCheckOnNewRevision=true`); default none, as Flux ships it. */
  readonly helmFeatureGates?: readonly string[]
  /** Bound on building the binaries; a cold build takes many minutes. Default 45 min. */
  readonly buildTimeoutMs?: number
  /** Bound on each component becoming ready. Default 120 s. */
  readonly readyTimeoutMs?: number
  /**
   * Kill the processes and remove temp data when this process gets SIGINT/SIGTERM/SIGHUP
   * (then re-raise). Default true; a supervisor that stops gracefully itself says false.
   */
  readonly handleSignals?: boolean
}

export interface ClusterProcess {
  readonly name: BinaryName
  readonly pid: number
  readonly logPath: string
}

export interface LocalCluster {
  readonly dir: string
  readonly kubeconfigPath: string
  /** Admin (system:masters) client configuration. */
  readonly kubeconfig: KubeConfig
  /** e.g. https://127.0.0.1:41234 */
  readonly server: string
  readonly adminToken: string
  /** Base64 PEM the apiserver's serving certificate chains to. */
  readonly caData: string
  /** e.g. http://127.0.0.1:41235 (no trailing slash); serves index.yaml. */
  readonly chartRepoUrl: string
  /** e.g. http://127.0.0.1:41236 (no trailing slash); serves `<name>.git` over smart HTTP (git-server.ts). */
  readonly gitServerUrl: string
  /** With `flux`: e.g. http://127.0.0.1:41237, an OCI registry (no auth, plain HTTP) that oci-chart.ts pushes charts to. */
  readonly ociRegistryUrl: string | undefined
  /** Root of the build cache's binaries, and each binary's path. */
  readonly binDir: string
  readonly binaries: Readonly<Partial<Record<BuiltBinary, string>>>
  readonly versions: Versions
  readonly flux: boolean
  readonly ports: Ports
  readonly processes: readonly ClusterProcess[]
  /** Milliseconds spent per phase: build, etcd, apiserver, crds, controllers, total. */
  readonly timings: Readonly<Record<string, number>>
  publishChart(spec: ChartSpec): PublishedChart
  createNamespace(name: string, labels?: Record<string, string>): Promise<void>
  /** TokenRequest for namespace/name (the ServiceAccount is created when missing). */
  serviceAccountToken(namespace: string, name: string, options?: TokenOptions): Promise<string>
  /** Writes a kubeconfig for another identity into the cluster dir; returns its path. */
  kubeconfigFor(token: string, name?: string): Promise<string>
  /**
   * Stops one component (SIGTERM, or SIGKILL with `kill`) and leaves it down: fault tests
   * use it to take the apiserver or etcd away in the middle of a run.
   */
  stopComponent(name: BinaryName, options?: { kill?: boolean }): Promise<void>
  /** Starts a stopped component again with the same ports, data and certificates; resolves when it is ready. */
  startComponent(name: BinaryName): Promise<void>
  /** stopComponent, wait `downMs` (default 0), startComponent. Kubeconfigs and tokens stay valid. */
  restart(name: BinaryName, options?: { kill?: boolean; downMs?: number }): Promise<void>
  /** Stops controllers, apiserver, etcd (SIGTERM, SIGKILL after a few seconds), the chart and git servers; removes data. */
  stop(): Promise<void>
}

const GRACE_MS = 5_000

export async function startCluster(options: StartClusterOptions = {}): Promise<LocalCluster> {
  const log = options.log ?? (() => {})
  const flux = options.flux ?? false
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000
  const started = Date.now()
  const timings: Record<string, number> = {}
  const timed = async <T>(phase: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = Date.now()
    try {
      return await fn()
    } finally {
      timings[phase] = Date.now() - t0
    }
  }

  const oci = flux && (options.ociRegistry ?? true)
  const targets: BuildTarget[] = flux
    ? ['kube', 'source-controller', 'helm-controller', 'kustomize-controller', ...(oci ? (['registry'] as const) : [])]
    : ['kube']
  const binaries = await timed('build', () => ensureBinaries(targets, { log, timeoutMs: options.buildTimeoutMs ?? 45 * 60_000 }))
  const versions = await readVersions()

  const temporary = options.dir === undefined
  if (temporary) await sweepTempDirs()
  const dir = options.dir ? resolve(options.dir) : await mkdtemp(join(tmpdir(), TEMP_PREFIX))
  if (temporary) await writeFile(join(dir, OWNER_FILE), `${process.pid}\n`)
  const dataDir = join(dir, 'data')
  const logDir = join(dir, 'logs')
  await rm(dataDir, { recursive: true, force: true })
  await mkdir(dataDir, { recursive: true })
  await mkdir(logDir, { recursive: true })

  const session: Session = { children: [], dataDir, dir, temporary, relaunch: {} }
  sessions.add(session)
  if (options.handleSignals ?? true) installSignalHandlers()

  const servers: LoopbackServer[] = []
  try {
    const ports = await allocatePorts(options.ports)
    const chartServer = await startChartServer({ port: ports.chartRepo, charts: options.charts ?? [demoChart('0.1.0')] })
    servers.push(chartServer)
    const gitServer = await startGitServer({ port: ports.gitServer, root: join(dataDir, 'git') })
    servers.push(gitServer)

    const etcd = await timed('etcd', () => startEtcd(session, { binary: need(binaries, 'etcd'), ports, readyTimeoutMs, logDir, log }))
    const api = await timed('apiserver', () => startApiserver(session, { binary: need(binaries, 'kube-apiserver'), ports, readyTimeoutMs, logDir, log, etcd }))
    const kubeconfigPath = join(dir, 'kubeconfig')
    const kubeconfig = await writeKubeconfig(kubeconfigPath, { server: api.server, caData: api.caData, token: api.adminToken })
    await timed('crds', () => applyCrds(kubeconfig, versions, { timeoutMs: readyTimeoutMs, log }))
    await createNamespace(kubeconfig, 'flux-system')
    if (flux) {
      const helmFeatureGates = options.helmFeatureGates ?? []
      await timed('controllers', () => startControllers(session, { binaries, ports, readyTimeoutMs, logDir, log, kubeconfigPath, helmFeatureGates }))
    }
    const ociRegistryUrl = oci ? await startOciRegistry(session, { binary: need(binaries, 'oci-registry'), ports, readyTimeoutMs, logDir, log }) : undefined
    timings.total = Date.now() - started
    log(
      `cluster ready in ${formatMs(timings.total)} (${Object.entries(timings)
        .map(([k, v]) => `${k} ${formatMs(v)}`)
        .join(', ')})`,
    )

    let stopping: Promise<void> | undefined
    return {
      dir,
      kubeconfigPath,
      kubeconfig,
      server: api.server,
      adminToken: api.adminToken,
      caData: api.caData,
      chartRepoUrl: chartServer.url,
      gitServerUrl: gitServer.url,
      ociRegistryUrl,
      binDir: join(cacheDir(), 'bin'),
      binaries,
      versions,
      flux,
      ports,
      // A getter: a restarted component has a new pid.
      get processes() {
        return session.children.map(({ name, pid, logPath }) => ({ name, pid, logPath }))
      },
      timings: { ...timings },
      publishChart: (spec) => chartServer.publish(spec),
      createNamespace: (name, labels) => createNamespace(kubeconfig, name, labels),
      serviceAccountToken: (namespace, name, tokenOptions) => serviceAccountToken(kubeconfig, namespace, name, tokenOptions),
      kubeconfigFor: async (token, name) => {
        const path = join(dataDir, `kubeconfig-${name ?? randomBytes(4).toString('hex')}`)
        await writeKubeconfig(path, { server: api.server, caData: api.caData, token, user: name ?? 'user' })
        return path
      },
      stopComponent: (name, o) => stopComponent(session, name, o),
      startComponent: (name) => startComponent(session, name),
      restart: async (name, o = {}) => {
        await stopComponent(session, name, o)
        if (o.downMs) await sleep(o.downMs)
        await startComponent(session, name)
      },
      stop: () => (stopping ??= stopSession(session, servers)),
    }
  } catch (error) {
    await stopSession(session, servers, { keepLogs: true })
    if (error instanceof Error) error.message += `\n(cluster logs kept in ${logDir})`
    throw error
  }
}

const TEMP_PREFIX = 'hrt-cluster-'
const OWNER_FILE = 'owner.pid'

// A hard-killed owner (SIGKILL) cannot remove its temp dir; the next start does.
async function sweepTempDirs(): Promise<void> {
  const entries = await readdir(tmpdir()).catch(() => [] as string[])
  for (const entry of entries.filter((e) => e.startsWith(TEMP_PREFIX))) {
    const dir = join(tmpdir(), entry)
    const owner = Number((await readFile(join(dir, OWNER_FILE), 'utf8').catch(() => '')).trim())
    if (Number.isInteger(owner) && owner > 0 && !pidAlive(owner)) await rm(dir, { recursive: true, force: true })
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

// --- binaries, versions, CRDs --------------------------------------------------

export function cacheDir(): string {
  return process.env.HELMRELEASE_TRIGGER_CACHE ?? join(process.env.HOME ?? tmpdir(), '.cache', 'helmrelease-trigger')
}

/** Builds what is missing (each target on its own, so a failure names it) and returns the binaries' paths. */
export async function ensureBinaries(
  targets: readonly BuildTarget[],
  options: { log?: (line: string) => void; timeoutMs?: number } = {},
): Promise<Partial<Record<BuiltBinary, string>>> {
  const log = options.log ?? (() => {})
  const deadline = Date.now() + (options.timeoutMs ?? 45 * 60_000)
  for (const target of targets) {
    const result = await run('bash', [BUILD_SCRIPT, target], { onLine: log, timeoutMs: Math.max(0, deadline - Date.now()) })
    if (result.code !== 0) {
      const why = result.timedOut ? 'timed out' : `exit ${result.code ?? result.signal}`
      throw new Error(
        `building the local cluster's '${target}' binaries failed (${why}); run \`test/cluster/build.sh ${target}\` to see why.\n` +
          `Last output:\n${result.lines.slice(-15).join('\n')}`,
      )
    }
  }
  const printed = await run('bash', [BUILD_SCRIPT, '--print-paths', ...targets], { timeoutMs: 60_000 })
  if (printed.code !== 0) throw new Error(`test/cluster/build.sh --print-paths failed:\n${printed.lines.join('\n')}`)
  const paths: Partial<Record<BuiltBinary, string>> = {}
  for (const line of printed.stdout.split('\n')) {
    const [name, path] = splitOnce(line.trim(), '=')
    const binary = BUILT_BINARIES.find((b) => b === name)
    if (binary && path) paths[binary] = path
  }
  for (const [name, path] of Object.entries(paths)) {
    if (!existsSync(path)) throw new Error(`${name} is missing at ${path} after the build; run \`test/cluster/build.sh\` to see why`)
  }
  return paths
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator)
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + separator.length)]
}

function need(binaries: Partial<Record<BuiltBinary, string>>, name: BuiltBinary): string {
  const path = binaries[name]
  if (!path) throw new Error(`no ${name} binary was built`)
  return path
}

/** Versions pinned by the wrapper modules' go.mod files (the single source of truth). */
export async function readVersions(): Promise<Versions> {
  const kube = await readFile(join(CLUSTER_SRC, 'kube', 'go.mod'), 'utf8')
  const goMod = (controller: Parameters<typeof controllerWrapper>[0]): string => `test/cluster/${controllerWrapper(controller)}/go.mod`
  const sourceMod = goMod('source-controller')
  const helmMod = goMod('helm-controller')
  const kustomizeMod = goMod('kustomize-controller')
  const source = await readFile(join(REPO_ROOT, sourceMod), 'utf8')
  const helm = await readFile(join(REPO_ROOT, helmMod), 'utf8')
  const kustomize = await readFile(join(REPO_ROOT, kustomizeMod), 'utf8')
  return {
    kubernetes: moduleVersion(kube, 'k8s.io/kubernetes', 'test/cluster/kube/go.mod'),
    etcd: moduleVersion(kube, 'go.etcd.io/etcd/server/v3', 'test/cluster/kube/go.mod'),
    sourceController: moduleVersion(source, 'github.com/fluxcd/source-controller', sourceMod),
    helmController: moduleVersion(helm, 'github.com/fluxcd/helm-controller', helmMod),
    kustomizeController: moduleVersion(kustomize, 'github.com/fluxcd/kustomize-controller', kustomizeMod),
    helm: /^\s*helm\.sh\/helm\/v4\s/m.test(helm) ? moduleVersion(helm, 'helm.sh/helm/v4', helmMod) : moduleVersion(helm, 'helm.sh/helm/v3', helmMod),
  }
}

/** The version `module` is required at, on a one-line `require` or inside a `require (` block. */
export function moduleVersion(goMod: string, module: string, file = 'go.mod'): string {
  for (const raw of goMod.split('\n')) {
    const fields = raw
      .replace(/\/\/.*$/, '')
      .trim()
      .replace(/^require\s+/, '')
      .split(/\s+/)
    if (fields[0] === module && fields[1]?.startsWith('v')) return fields[1]
  }
  throw new Error(`${file} does not require ${module}`)
}

// Module paths in the module cache spell upper-case letters as `!` + lower case.
function escapeModulePath(path: string): string {
  return path.replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`)
}

const GO_ENV = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' }

async function crdDir(wrapper: string, module: string, version: string): Promise<string> {
  const cache = await run('go', ['env', 'GOMODCACHE'], { cwd: join(CLUSTER_SRC, wrapper), env: GO_ENV, timeoutMs: 60_000 })
  const modCache = cache.stdout.trim()
  if (cache.code !== 0 || !modCache) throw new Error(`go env GOMODCACHE failed:\n${cache.lines.join('\n')}`)
  const dir = join(modCache, `${escapeModulePath(module)}@${version}`, 'config', 'crd', 'bases')
  if (existsSync(dir)) return dir
  const download = await run('go', ['mod', 'download', `${module}@${version}`], {
    cwd: join(CLUSTER_SRC, wrapper),
    env: GO_ENV,
    timeoutMs: 10 * 60_000,
  })
  if (download.code !== 0 || !existsSync(dir)) {
    throw new Error(`cannot get the CRDs of ${module}@${version} (go mod download in test/cluster/${wrapper}):\n${download.lines.join('\n')}`)
  }
  return dir
}

/** The HelmRelease and Kustomization CRDs and every source-controller CRD, as pinned by the wrapper modules. */
export async function fluxCrds(versions: Versions): Promise<V1CustomResourceDefinition[]> {
  const dirs = [
    await crdDir(controllerWrapper('helm-controller'), 'github.com/fluxcd/helm-controller', versions.helmController),
    await crdDir(controllerWrapper('source-controller'), 'github.com/fluxcd/source-controller', versions.sourceController),
    await crdDir(controllerWrapper('kustomize-controller'), 'github.com/fluxcd/kustomize-controller', versions.kustomizeController),
  ]
  const crds: V1CustomResourceDefinition[] = []
  for (const dir of dirs) {
    for (const file of (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort()) {
      // loadAllYaml maps wire names (x-kubernetes-preserve-unknown-fields…) onto the
      // typed model the API client serialises; a plain YAML parse would lose them.
      for (const doc of loadAllYaml(await readFile(join(dir, file), 'utf8')) as (V1CustomResourceDefinition | null)[]) {
        if (doc?.kind === 'CustomResourceDefinition') crds.push(doc)
      }
    }
  }
  return crds
}

async function applyCrds(kc: KubeConfig, versions: Versions, options: { timeoutMs: number; log: (line: string) => void }): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api)
  const crds = await fluxCrds(versions)
  await Promise.all(
    crds.map(async (crd) => {
      try {
        await api.createCustomResourceDefinition({ body: crd })
      } catch (error) {
        if (!isApiStatus(error, 409)) throw new Error(`creating CRD ${crd.metadata?.name}: ${errorMessage(error)}`, { cause: error })
      }
      const name = crd.metadata?.name ?? ''
      await waitFor(
        async () => {
          const live = await api.readCustomResourceDefinition({ name })
          return live.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
        },
        { timeoutMs: options.timeoutMs, message: `CRD ${name} to be Established` },
      )
    }),
  )
  options.log(`${crds.length} Flux CRDs established: ${crds.map((c) => c.metadata?.name).join(', ')}`)
}

// --- processes -----------------------------------------------------------------

interface Child {
  readonly name: BinaryName
  readonly pid: number
  readonly logPath: string
  readonly process: ChildProcess
  /** Resolves when the process has exited; `exit` stays undefined until then. */
  readonly exited: Promise<void>
  exit?: { code: number | null; signal: NodeJS.Signals | null }
}

interface Session {
  readonly children: Child[]
  readonly dataDir: string
  readonly dir: string
  readonly temporary: boolean
  /** How to start each component again with the same arguments, ports and certificates. */
  readonly relaunch: Partial<Record<BinaryName, () => Promise<void>>>
}

const sessions = new Set<Session>()

const SETPRIV = findOnPath('setpriv')

function findOnPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, command)
    if (dir && existsSync(candidate)) return candidate
  }
  return undefined
}

function spawnChild(
  session: Session,
  name: BinaryName,
  binary: string,
  args: readonly string[],
  options: { logDir: string; env?: NodeJS.ProcessEnv; cwd?: string },
): Child {
  const logPath = join(options.logDir, `${name}.log`)
  // A restarted component appends, so its log tells the whole story.
  const previous = session.children.findIndex((c) => c.name === name)
  const fd = openSync(logPath, previous === -1 ? 'w' : 'a')
  // pdeathsig: the kernel kills the child when we die, however we die.
  const [command, commandArgs] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', binary, ...args]] : [binary, [...args]]
  let process_: ChildProcess
  try {
    process_ = spawn(command, commandArgs, { stdio: ['ignore', fd, fd], env: options.env ?? process.env, cwd: options.cwd })
  } finally {
    closeSync(fd)
  }
  if (process_.pid === undefined) throw new Error(`cannot start ${name} (${binary})`)
  const exited = new Promise<void>((resolveExit) => {
    process_.once('exit', (code, signal) => {
      child.exit = { code, signal }
      resolveExit()
    })
    process_.once('error', (error) => {
      child.exit = { code: null, signal: null }
      writeFile(logPath, `\nspawn error: ${error.message}\n`, { flag: 'a' }).catch(() => {})
      resolveExit()
    })
  })
  const child: Child = { name, pid: process_.pid, logPath, process: process_, exited }
  if (previous === -1) session.children.push(child)
  else session.children[previous] = child
  return child
}

async function waitReady(child: Child, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let lastError = ''
  while (Date.now() < deadline) {
    if (child.exit) {
      const how = child.exit.signal ?? `exit code ${child.exit.code}`
      throw new Error(`${child.name} exited (${how}) before it was ready; ${child.logPath} ends with:\n${await logTail(child.logPath)}`)
    }
    try {
      if (await probe()) return
      lastError = 'not ready'
    } catch (error) {
      lastError = errorMessage(error)
    }
    await sleep(200)
  }
  throw new Error(`${child.name} not ready within ${timeoutMs / 1000}s (${lastError}); ${child.logPath} ends with:\n${await logTail(child.logPath)}`)
}

export async function logTail(path: string, lines = 25): Promise<string> {
  try {
    const file = await open(path, 'r')
    try {
      const { size } = await file.stat()
      const length = Math.min(size, 64 * 1024)
      const buffer = Buffer.alloc(length)
      await file.read(buffer, 0, length, size - length)
      return buffer.toString('utf8').trimEnd().split('\n').slice(-lines).join('\n')
    } finally {
      await file.close()
    }
  } catch {
    return '(no log)'
  }
}

interface ComponentOptions {
  readonly ports: Ports
  readonly readyTimeoutMs: number
  readonly logDir: string
  readonly log: (line: string) => void
}

async function startEtcd(session: Session, options: ComponentOptions & { binary: string }): Promise<string> {
  const client = `http://127.0.0.1:${options.ports.etcdClient}`
  const launch = async (): Promise<void> => {
    const child = spawnChild(
      session,
      'etcd',
      options.binary,
      [`--data-dir=${join(session.dataDir, 'etcd')}`, `--listen-client-urls=${client}`, `--listen-peer-urls=http://127.0.0.1:${options.ports.etcdPeer}`],
      { logDir: options.logDir },
    )
    const t0 = Date.now()
    await waitReady(child, async () => (await httpGet(`${client}/health`)).status === 200, options.readyTimeoutMs)
    options.log(`etcd ready on ${client} in ${formatMs(Date.now() - t0)}`)
  }
  session.relaunch.etcd = launch
  await launch()
  return client
}

interface Apiserver {
  readonly server: string
  readonly adminToken: string
  readonly caData: string
}

async function startApiserver(session: Session, options: ComponentOptions & { binary: string; etcd: string }): Promise<Apiserver> {
  const pki = join(session.dataDir, 'pki')
  const certDir = join(pki, 'serving')
  await mkdir(certDir, { recursive: true })

  const adminToken = randomBytes(24).toString('hex')
  const tokenFile = join(pki, 'tokens.csv')
  // token,user,uid,"group,…"
  await writeFile(tokenFile, `${adminToken},admin,admin-uid,"system:masters"\n`, { mode: 0o600 })

  const keys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  })
  const saKey = join(pki, 'sa.key')
  const saPub = join(pki, 'sa.pub')
  await writeFile(saKey, keys.privateKey, { mode: 0o600 })
  await writeFile(saPub, keys.publicKey)

  const port = options.ports.apiserver
  const server = `https://127.0.0.1:${port}`
  const launch = async (): Promise<void> => {
    const child = spawnChild(
      session,
      'kube-apiserver',
      options.binary,
      [
        `--etcd-servers=${options.etcd}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${port}`,
        // No --tls-cert-file: the apiserver writes a self-signed CA + serving cert here.
        `--cert-dir=${certDir}`,
        '--authorization-mode=RBAC',
        `--token-auth-file=${tokenFile}`,
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
        `--api-audiences=${SERVICE_ACCOUNT_ISSUER}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        '--profiling=false',
        // Endpoints may not hold a loopback address: publishing our advertise address
        // for the `kubernetes` Service would only log errors every few seconds.
        '--endpoint-reconciler-type=none',
      ],
      { logDir: options.logDir },
    )
    const t0 = Date.now()
    await waitReady(child, async () => (await httpGet(`${server}/readyz`, { token: adminToken, insecure: true })).status === 200, options.readyTimeoutMs)
    options.log(`kube-apiserver ready on ${server} in ${formatMs(Date.now() - t0)}`)
  }
  // The serving certificate stays in cert-dir, so a restarted apiserver keeps it (and the kubeconfig stays valid).
  session.relaunch['kube-apiserver'] = launch
  await launch()
  const caData = (await readFile(join(certDir, 'apiserver.crt'))).toString('base64')
  return { server, adminToken, caData }
}

async function startControllers(
  session: Session,
  options: ComponentOptions & { binaries: Partial<Record<BuiltBinary, string>>; kubeconfigPath: string; helmFeatureGates: readonly string[] },
): Promise<void> {
  const { ports } = options
  const common = [
    '--enable-leader-election=false',
    '--events-addr=',
    '--log-level=info',
    '--watch-all-namespaces=true',
    // Default 30s: how long a HelmRelease waits before re-checking a chart that is not ready.
    '--requeue-dependency=2s',
  ]
  const launchSource = async (): Promise<void> => {
    const source = spawnChild(
      session,
      'source-controller',
      need(options.binaries, 'source-controller'),
      [
        ...common,
        `--storage-path=${await controllerDir(session, 'source-controller', 'storage')}`,
        `--storage-addr=127.0.0.1:${ports.sourceStorage}`,
        `--storage-adv-addr=127.0.0.1:${ports.sourceStorage}`,
        `--metrics-addr=127.0.0.1:${ports.sourceMetrics}`,
        `--health-addr=127.0.0.1:${ports.sourceHealth}`,
      ],
      { logDir: options.logDir, env: await controllerEnv(session, 'source-controller', options.kubeconfigPath) },
    )
    await waitReady(source, async () => (await httpGet(`http://127.0.0.1:${ports.sourceHealth}/readyz`)).status === 200, options.readyTimeoutMs)
  }
  const launchHelm = async (): Promise<void> => {
    const helm = spawnChild(
      session,
      'helm-controller',
      need(options.binaries, 'helm-controller'),
      [
        ...common,
        `--metrics-addr=127.0.0.1:${ports.helmMetrics}`,
        `--health-addr=127.0.0.1:${ports.helmHealth}`,
        // Default 600s: a stop should not wait for an in-flight Helm action.
        '--graceful-shutdown-timeout=5s',
        ...(options.helmFeatureGates.length === 0 ? [] : [`--feature-gates=${options.helmFeatureGates.join(',')}`]),
      ],
      { logDir: options.logDir, env: await controllerEnv(session, 'helm-controller', options.kubeconfigPath) },
    )
    await waitReady(helm, async () => (await httpGet(`http://127.0.0.1:${ports.helmHealth}/readyz`)).status === 200, options.readyTimeoutMs)
  }
  const launchKustomize = async (): Promise<void> => {
    const kustomize = spawnChild(
      session,
      'kustomize-controller',
      need(options.binaries, 'kustomize-controller'),
      [
        ...common,
        `--metrics-addr=127.0.0.1:${ports.kustomizeMetrics}`,
        `--health-addr=127.0.0.1:${ports.kustomizeHealth}`,
        // Tests and the demo apply only what the loopback git server holds.
        '--no-remote-bases=true',
      ],
      { logDir: options.logDir, env: await controllerEnv(session, 'kustomize-controller', options.kubeconfigPath) },
    )
    await waitReady(kustomize, async () => (await httpGet(`http://127.0.0.1:${ports.kustomizeHealth}/readyz`)).status === 200, options.readyTimeoutMs)
  }
  session.relaunch['source-controller'] = launchSource
  session.relaunch['helm-controller'] = launchHelm
  session.relaunch['kustomize-controller'] = launchKustomize
  const t0 = Date.now()
  await Promise.all([launchSource(), launchHelm(), launchKustomize()])
  options.log(`source-controller, helm-controller and kustomize-controller ready in ${formatMs(Date.now() - t0)}`)
}

/** go-containerregistry's in-memory registry: charts pushed to it live as long as it runs. Returns its base URL. */
async function startOciRegistry(session: Session, options: ComponentOptions & { binary: string }): Promise<string> {
  const url = `http://127.0.0.1:${options.ports.ociRegistry}`
  const launch = async (): Promise<void> => {
    const registry = spawnChild(session, 'oci-registry', options.binary, [`-port=${options.ports.ociRegistry}`], { logDir: options.logDir })
    await waitReady(registry, async () => (await httpGet(`${url}/v2/`)).status === 200, options.readyTimeoutMs)
  }
  session.relaunch['oci-registry'] = launch
  const t0 = Date.now()
  await launch()
  options.log(`oci-registry ready on ${url} in ${formatMs(Date.now() - t0)}`)
  return url
}

async function controllerDir(session: Session, name: string, sub: string): Promise<string> {
  const dir = join(session.dataDir, name, sub)
  await mkdir(dir, { recursive: true })
  return dir
}

// Each controller gets its own HOME and TMPDIR inside the data dir, so Helm's and
// Go's scratch files go away with the cluster.
async function controllerEnv(session: Session, name: string, kubeconfigPath: string): Promise<NodeJS.ProcessEnv> {
  return {
    PATH: process.env.PATH,
    HOME: await controllerDir(session, name, 'home'),
    TMPDIR: await controllerDir(session, name, 'tmp'),
    KUBECONFIG: kubeconfigPath,
    RUNTIME_NAMESPACE: 'flux-system',
  }
}

// --- stopping ------------------------------------------------------------------

/** The chart repository and the git server: in-process HTTP servers the cluster owns. */
interface LoopbackServer {
  close(): Promise<void>
}

async function stopSession(session: Session, servers: readonly LoopbackServer[], options: { keepLogs?: boolean } = {}): Promise<void> {
  // Reverse start order: the controllers, then the apiserver, then etcd.
  const order: BinaryName[][] = [['kustomize-controller', 'helm-controller', 'source-controller', 'oci-registry'], ['kube-apiserver'], ['etcd']]
  for (const names of order) {
    await Promise.all(session.children.filter((c) => names.includes(c.name)).map((c) => stopChild(c)))
  }
  await Promise.all(servers.map((server) => server.close()))
  sessions.delete(session)
  if (session.temporary && !options.keepLogs) await rm(session.dir, { recursive: true, force: true })
  else await rm(session.dataDir, { recursive: true, force: true })
}

async function stopComponent(session: Session, name: BinaryName, options: { kill?: boolean } = {}): Promise<void> {
  const child = session.children.find((c) => c.name === name)
  if (child === undefined) throw new Error(`${name} is not part of this cluster`)
  if (options.kill && !child.exit) {
    child.process.kill('SIGKILL')
    await child.exited
  }
  await stopChild(child)
}

async function startComponent(session: Session, name: BinaryName): Promise<void> {
  const child = session.children.find((c) => c.name === name)
  const launch = session.relaunch[name]
  if (child === undefined || launch === undefined) throw new Error(`${name} is not part of this cluster`)
  if (!child.exit) throw new Error(`${name} is still running; stop it first`)
  await launch()
}

async function stopChild(child: Child): Promise<void> {
  if (child.exit) return
  child.process.kill('SIGTERM')
  const timer = sleep(GRACE_MS).then(() => 'timeout' as const)
  if ((await Promise.race([child.exited.then(() => 'exited' as const), timer])) === 'timeout') {
    child.process.kill('SIGKILL')
    await child.exited
  }
}

// On exit (normal or via a signal we handle) nothing may outlive us, and temp data goes.
function killAllSync(): void {
  for (const session of sessions) {
    for (const child of session.children) {
      if (!child.exit) {
        try {
          process.kill(child.pid, 'SIGKILL')
        } catch {
          // already gone
        }
      }
    }
    rmSync(session.temporary ? session.dir : session.dataDir, { recursive: true, force: true })
  }
  sessions.clear()
}

process.once('exit', killAllSync)

let signalHandlersInstalled = false
function installSignalHandlers(): void {
  if (signalHandlersInstalled) return
  signalHandlersInstalled = true
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      killAllSync()
      // Were we the only listener, the default action (exit) must still happen.
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, handler)
        process.kill(process.pid, signal)
      }
    }
    process.on(signal, handler)
  }
}

// --- ports, HTTP, commands -------------------------------------------------------

const PORT_NAMES = [
  'etcdClient',
  'etcdPeer',
  'apiserver',
  'chartRepo',
  'gitServer',
  'sourceStorage',
  'sourceMetrics',
  'sourceHealth',
  'helmMetrics',
  'helmHealth',
  'kustomizeMetrics',
  'kustomizeHealth',
  'ociRegistry',
] as const satisfies readonly (keyof Ports)[]

/** Fixed ports must be free (else a clear error); the others are picked free by binding 127.0.0.1:0. */
export async function allocatePorts(fixed: Partial<Ports> = {}): Promise<Ports> {
  const held: Server[] = []
  const ports: Partial<Record<keyof Ports, number>> = {}
  try {
    for (const name of PORT_NAMES) {
      const wanted = fixed[name]
      if (wanted !== undefined) {
        held.push(await listen(wanted, `port ${wanted} (${name}) on 127.0.0.1 is already in use`))
        ports[name] = wanted
      }
    }
    for (const name of PORT_NAMES) {
      if (ports[name] !== undefined) continue
      // Controller ports are only needed with flux, but picking them costs nothing.
      const server = await listen(0, 'cannot bind 127.0.0.1:0')
      held.push(server)
      ports[name] = (server.address() as AddressInfo).port
    }
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((done) => s.close(() => done()))))
  }
  return ports as Ports
}

function listen(port: number, message: string): Promise<Server> {
  return new Promise((resolveListen, reject) => {
    const server = createServer()
    server.once('error', (error: NodeJS.ErrnoException) => reject(new Error(`${message} (${error.code ?? error.message})`)))
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolveListen(server))
  })
}

interface HttpResult {
  readonly status: number
  readonly body: string
}

/** GET on loopback with a short timeout; `insecure` skips TLS verification (readiness probes only). */
export function httpGet(url: string, options: { token?: string; insecure?: boolean; timeoutMs?: number } = {}): Promise<HttpResult> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest
  return new Promise((resolveGet, reject) => {
    const req = request(
      url,
      {
        method: 'GET',
        headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
        rejectUnauthorized: !options.insecure,
        timeout: options.timeoutMs ?? 5_000,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolveGet({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)))
    req.on('error', reject)
    req.end()
  })
}

interface RunResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly timedOut: boolean
  readonly stdout: string
  /** stderr lines (and stdout lines when onLine is given), for error messages. */
  readonly lines: string[]
}

/** Runs a command without a shell and without stdin; kills its process group on timeout. */
function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number; onLine?: (line: string) => void },
): Promise<RunResult> {
  return new Promise((resolveRun) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const lines: string[] = []
    let stdout = ''
    let timedOut = false
    const onText = (text: string): void => {
      for (const line of text.split('\n')) {
        if (!line) continue
        lines.push(line)
        if (lines.length > 200) lines.shift()
        options.onLine?.(line)
      }
    }
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text
      if (options.onLine) onText(text)
    })
    child.stderr.setEncoding('utf8').on('data', onText)
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child.pid)
    }, options.timeoutMs)
    // A build is its own process group (to kill it whole on timeout): end it with us.
    const onExit = (): void => killGroup(child.pid)
    process.once('exit', onExit)
    let settled = false
    const settle = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      process.removeListener('exit', onExit)
      resolveRun({ code, signal, timedOut, stdout, lines })
    }
    child.once('error', (error) => {
      lines.push(`${command}: ${error.message}`)
      settle(null, null)
    })
    child.once('close', settle)
  })
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    // already gone
  }
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`
}
