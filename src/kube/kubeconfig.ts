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
  return { config, origin, server: cluster.server, secrets: secretsOf(config) }
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
  const values = config.getUsers().flatMap((u) => [u.token, u.password, u.keyData, u.certData])
  const fromAuthProviders = config.getUsers().flatMap((u) => {
    const c: unknown = u.authProvider?.config
    if (typeof c !== 'object' || c === null) return []
    return Object.values(c).filter((v): v is string => typeof v === 'string')
  })
  const all = [...values, ...fromAuthProviders].filter((v): v is string => typeof v === 'string' && v.length >= 4)
  // Base64 fields also appear decoded (a PEM key in an error message), so mask both forms.
  const decoded = all
    .filter((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length > 40)
    .flatMap((v) => Buffer.from(v, 'base64').toString('utf8').split('\n'))
    .map((l) => l.trim())
    .filter((l) => l.length >= 16 && !l.startsWith('-----'))
  return [...new Set([...all, ...decoded])]
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1)
}
