// Where the cluster comes from: the `kubeconfig` input (plain or base64), else $KUBECONFIG
// or ~/.kube/config, else the in-cluster service account. Never the silent localhost:8080
// fallback: no cluster is an error. Errors never echo the kubeconfig's content.

import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { parse } from 'yaml'
import { ConfigurationError, messageOf } from '../lib/errors.ts'

export const KUBECONFIG_ENCODINGS = ['auto', 'plain', 'base64'] as const
export type KubeconfigEncoding = (typeof KUBECONFIG_ENCODINGS)[number]

export interface KubeconfigRequest {
  readonly kubeconfig: string | undefined
  readonly encoding: KubeconfigEncoding
  readonly context: string | undefined
  /** Environment to read KUBECONFIG, HOME and the in-cluster variables from. */
  readonly env: Readonly<Record<string, string | undefined>>
}

export interface LoadedKubeconfig {
  readonly config: KubeConfig
  /** Where it came from, for the summary ("input", a file path, "in-cluster"). */
  readonly origin: string
  readonly server: string
  /** Tokens, keys, certificates and passwords: to be masked before anything is logged. */
  readonly secrets: readonly string[]
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token'

export function loadKubeconfig(request: KubeconfigRequest): LoadedKubeconfig {
  const { config, origin } = load(request)
  if (request.context !== undefined) {
    const names = config.getContexts().map((c) => c.name)
    if (!names.includes(request.context)) {
      throw new ConfigurationError(`Context '${request.context}' is not in the kubeconfig (${origin}); it has: ${names.join(', ') || 'no contexts'}.`)
    }
    config.setCurrentContext(request.context)
  }
  const cluster = config.getCurrentCluster()
  if (cluster === null || cluster.server === '') {
    throw new ConfigurationError(`The kubeconfig (${origin}) has no current context with a cluster server; set current-context or the 'context' input.`)
  }
  quietExecPlugins(config)
  return { config, origin, server: cluster.server, secrets: secretsOf(config) }
}

/**
 * An exec credential plugin's error output often quotes what it was given (keys, tokens) and
 * client-node turns it into the error message whole. Replace it with one sentence naming the
 * command and its exit code; the output itself is never shown.
 */
function quietExecPlugins(config: KubeConfig): void {
  // client-node keeps its built-in authenticators in a private field; ExecAuth is found by shape.
  const found: unknown = Reflect.get(config, 'authenticators')
  const authenticators: unknown[] = Array.isArray(found) ? found : []
  for (const auth of authenticators) {
    if (!isExecAuthenticator(auth)) continue
    const spawn = auth.execFn
    let exit: number | null = null
    auth.execFn = (command, args, options) => {
      const child = spawn(command, args, options)
      child.on('close', (code) => (exit = code))
      return child
    }
    const apply = auth.applyAuthentication.bind(auth)
    auth.applyAuthentication = async (user, options) => {
      exit = null
      try {
        return await apply(user, options)
      } catch (error) {
        const command = execCommand(user)
        // The spawn error (ENOENT) names only the command; the plugin's own output is never shown.
        const how = exit === null ? `did not run: ${errorCode(error)}` : `exit ${exit}`
        throw new ConfigurationError(
          `The kubeconfig's exec credential plugin '${command}' failed (${how}); its error output is not shown, as it may hold credentials. Run it by hand to see why.`,
        )
      }
    }
  }
}

interface ExecAuthenticator {
  execFn: (command: string, args: readonly string[] | undefined, options: object) => import('node:child_process').ChildProcess
  applyAuthentication: (user: unknown, options: object) => Promise<unknown>
}

function isExecAuthenticator(value: unknown): value is ExecAuthenticator {
  return typeof value === 'object' && value !== null && 'execFn' in value && typeof value.execFn === 'function' && 'applyAuthentication' in value
}

function errorCode(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : 'no exit code'
}

function execCommand(user: unknown): string {
  const exec = typeof user === 'object' && user !== null && 'exec' in user ? user.exec : undefined
  const command = typeof exec === 'object' && exec !== null && 'command' in exec ? exec.command : undefined
  return typeof command === 'string' ? command.split('/').pop() || command : 'unknown'
}

function load(request: KubeconfigRequest): { config: KubeConfig; origin: string } {
  if (request.kubeconfig !== undefined) {
    return { config: fromText(decode(request.kubeconfig, request.encoding), 'the kubeconfig input'), origin: 'input' }
  }
  const fromEnv = request.env['KUBECONFIG']
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    const files = fromEnv.split(':').filter((f) => f !== '')
    const present = files.filter((f) => existsSync(f))
    if (present.length === 0) {
      throw new ConfigurationError(`KUBECONFIG names ${files.join(', ')}, but no such file exists; fix KUBECONFIG or set the 'kubeconfig' input.`)
    }
    const config = new KubeConfig()
    for (const file of present) config.mergeConfig(fromFile(file), true)
    config.setCurrentContext(fromFile(present[0] ?? '').getCurrentContext() || config.getCurrentContext())
    return { config, origin: present.join(':') }
  }
  const home = request.env['HOME'] ?? homedir()
  const defaultFile = join(home, '.kube', 'config')
  if (existsSync(defaultFile)) return { config: fromFile(defaultFile), origin: defaultFile }
  if (request.env['KUBERNETES_SERVICE_HOST'] !== undefined && existsSync(IN_CLUSTER_TOKEN)) {
    const config = new KubeConfig()
    config.loadFromCluster()
    return { config, origin: 'in-cluster service account' }
  }
  throw new ConfigurationError("No Kubernetes cluster is configured: set the 'kubeconfig' input (plain or base64), or KUBECONFIG, or run inside a cluster.")
}

/** Plain YAML/JSON or base64 of it. auto: YAML has a colon; base64 never does. */
export function decode(text: string, encoding: KubeconfigEncoding): string {
  const trimmed = text.trim()
  const looksPlain = trimmed.includes(':')
  if (encoding === 'plain' || (encoding === 'auto' && looksPlain)) return trimmed
  const compact = trimmed.replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact)) {
    throw new ConfigurationError(
      encoding === 'base64'
        ? "The kubeconfig input is not valid base64 (kubeconfig-encoding: base64); encode the file with 'base64 -w0'."
        : "The kubeconfig input is neither kubeconfig YAML nor base64 of it; paste the file's content or 'base64 -w0' of it.",
    )
  }
  const decoded = Buffer.from(compact, 'base64').toString('utf8')
  if (!decoded.includes(':')) {
    throw new ConfigurationError('The kubeconfig input decodes from base64 to something that is not kubeconfig YAML; check the secret holds the right file.')
  }
  return decoded
}

function fromText(text: string, what: string): KubeConfig {
  let parsed: unknown
  try {
    parsed = parse(text, { maxAliasCount: 100, logLevel: 'error' })
  } catch (error) {
    const line = /line (\d+)/.exec(messageOf(error))?.[1]
    throw new ConfigurationError(`${capitalise(what)} is not valid YAML${line === undefined ? '' : ` (line ${line})`}; check the secret's content.`)
  }
  if (typeof parsed !== 'object' || parsed === null || !('clusters' in parsed)) {
    throw new ConfigurationError(`${capitalise(what)} is not a kubeconfig: it has no 'clusters' list.`)
  }
  const config = new KubeConfig()
  try {
    config.loadFromString(text)
  } catch (error) {
    // client-node's messages name fields, never values; keep only the first line.
    throw new ConfigurationError(`${capitalise(what)} is not a valid kubeconfig: ${messageOf(error).split('\n')[0]}.`)
  }
  return config
}

function fromFile(file: string): KubeConfig {
  const config = new KubeConfig()
  try {
    config.loadFromFile(file)
  } catch (error) {
    throw new ConfigurationError(`The kubeconfig file ${file} cannot be read as a kubeconfig: ${messageOf(error).split('\n')[0]}.`)
  }
  return config
}

function secretsOf(config: KubeConfig): string[] {
  const users = config.getUsers()
  const values = users.flatMap((u) => [u.token, u.password, u.keyData, u.certData])
  const fromAuthProviders = users.flatMap((u) => {
    const c: unknown = u.authProvider?.config
    if (typeof c !== 'object' || c === null) return []
    return Object.values(c).filter((v): v is string => typeof v === 'string')
  })
  const fromExec = users.flatMap((u) => execSecrets(u.exec))
  const fromProxies = config.getClusters().flatMap((c) => userInfo(c.proxyUrl))
  const all = [...values, ...fromAuthProviders, ...fromExec, ...fromProxies].filter((v): v is string => typeof v === 'string' && v.length >= 4)
  // client-key-data and client-certificate-data are base64 and also appear decoded (a PEM line in
  // an error message): mask both forms. Only those: a token is not base64 of anything.
  const decoded = users
    .flatMap((u) => [u.keyData, u.certData])
    .filter((v): v is string => typeof v === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length > 40)
    .flatMap((v) => Buffer.from(v, 'base64').toString('utf8').split('\n'))
    .map((l) => l.trim())
    .filter((l) => l.length >= 16 && !l.startsWith('-----'))
  return [...new Set([...all, ...decoded])]
}

/** The values an exec plugin is given: every env value, and each argument that is not a flag name or a plain word. */
function execSecrets(exec: unknown): string[] {
  if (typeof exec !== 'object' || exec === null) return []
  const env = 'env' in exec && Array.isArray(exec.env) ? exec.env : []
  const values = env.flatMap((e: unknown) => (typeof e === 'object' && e !== null && 'value' in e && typeof e.value === 'string' ? [e.value] : []))
  const args = 'args' in exec && Array.isArray(exec.args) ? exec.args : []
  const tokens = args
    .flatMap((a: unknown) => (typeof a === 'string' ? [a.includes('=') ? a.slice(a.indexOf('=') + 1) : a] : []))
    .filter((a: string) => !a.startsWith('-') && !/^[a-z][a-z-]*$/.test(a))
  return [...values, ...tokens]
}

/** The user:password of a proxy URL. */
function userInfo(url: string | undefined): string[] {
  if (url === undefined) return []
  try {
    const parsed = new URL(url)
    return [parsed.password, decodeURIComponent(parsed.password)].filter((p) => p !== '')
  } catch {
    return []
  }
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1)
}
