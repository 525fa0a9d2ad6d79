// Small Kubernetes helpers shared by the cluster launcher (test/support/cluster.ts)
// and the tests' handle on it (test/support/context.ts).

import { writeFile } from 'node:fs/promises'
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node'
import { stringify } from 'yaml'

export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local'

export interface KubeconfigOptions {
  readonly server: string
  /** Base64 PEM of the apiserver's CA; without it the kubeconfig skips TLS verification. */
  readonly caData?: string
  readonly token: string
  readonly user?: string
}

/** A kubeconfig with one cluster, one token user and the context `local`. */
export function kubeconfigYaml(options: KubeconfigOptions): string {
  const user = options.user ?? 'admin'
  const cluster = options.caData
    ? { server: options.server, 'certificate-authority-data': options.caData }
    : { server: options.server, 'insecure-skip-tls-verify': true }
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster }],
    users: [{ name: user, user: { token: options.token } }],
    contexts: [{ name: 'local', context: { cluster: 'local', user } }],
    'current-context': 'local',
  })
}

/** One kubeconfig with a context per cluster (named like it), as a fleet operator keeps it. */
export function multiContextKubeconfigYaml(clusters: Readonly<Record<string, KubeconfigOptions>>): string {
  const entries = Object.entries(clusters)
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: entries.map(([name, o]) => ({ name, cluster: { server: o.server, 'certificate-authority-data': o.caData } })),
    users: entries.map(([name, o]) => ({ name: `${name}-${o.user ?? 'admin'}`, user: { token: o.token } })),
    contexts: entries.map(([name, o]) => ({ name, context: { cluster: name, user: `${name}-${o.user ?? 'admin'}` } })),
    'current-context': entries[0]?.[0] ?? '',
  })
}

export async function writeKubeconfig(path: string, options: KubeconfigOptions): Promise<KubeConfig> {
  const yaml = kubeconfigYaml(options)
  await writeFile(path, yaml, { mode: 0o600 })
  return kubeConfigFromString(yaml)
}

export function kubeConfigFromString(yaml: string): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromString(yaml)
  return kc
}

export function kubeConfigFromFile(path: string): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromFile(path)
  return kc
}

export function isApiStatus(error: unknown, code: number): boolean {
  return error instanceof ApiException && error.code === code
}

/** Creates a namespace (an existing one is fine). Namespaces never finish deleting here: use unique names. */
export async function createNamespace(kc: KubeConfig, name: string, labels: Record<string, string> = {}): Promise<void> {
  try {
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name, labels } } })
  } catch (error) {
    if (!isApiStatus(error, 409)) throw error
  }
}

export interface TokenOptions {
  readonly expirationSeconds?: number
  readonly audiences?: readonly string[]
}

/**
 * A token for the ServiceAccount `namespace/name` via the TokenRequest API, creating
 * the ServiceAccount first when missing (no controller-manager creates any here).
 */
export async function serviceAccountToken(kc: KubeConfig, namespace: string, name: string, options: TokenOptions = {}): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api)
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
  } catch (error) {
    if (!isApiStatus(error, 409)) throw error
  }
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: {
      spec: {
        audiences: [...(options.audiences ?? [SERVICE_ACCOUNT_ISSUER])],
        expirationSeconds: options.expirationSeconds ?? 3600,
      },
    },
  })
  const token = request.status?.token
  if (!token) throw new Error(`TokenRequest for ServiceAccount ${namespace}/${name} returned no token`)
  return token
}

export interface WaitOptions {
  readonly timeoutMs?: number
  readonly intervalMs?: number
  /** Says what was awaited, for the timeout error. */
  readonly message?: string
}

/**
 * Polls `check` until it returns a value other than undefined/false and returns it.
 * Errors thrown by `check` are retried; the last one is the timeout error's cause.
 */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, options: WaitOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 60_000
  const intervalMs = options.intervalMs ?? 250
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value
    } catch (error) {
      lastError = error
    }
    if (Date.now() >= deadline) {
      const what = options.message ?? 'condition'
      const detail = lastError === undefined ? '' : `; last error: ${errorMessage(lastError)}`
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`, { cause: lastError })
    }
    await sleep(intervalMs)
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export function errorMessage(error: unknown): string {
  if (error instanceof ApiException) return `HTTP ${error.code}: ${apiMessage(error.body)}`
  return error instanceof Error ? error.message : String(error)
}

function apiMessage(body: unknown): string {
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown }
      if (typeof parsed.message === 'string') return parsed.message
    } catch {
      return body
    }
    return body
  }
  return JSON.stringify(body)
}
