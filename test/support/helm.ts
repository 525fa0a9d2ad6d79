// The real, native helm CLI (v4.2.4, the Helm helm-controller 1.6.4 renders with) as the oracle of
// the differential test of the sandbox's helmTemplate; the product never runs it. Built from its Go
// module by test/cluster/build.sh (target `helm`, cached like the cluster's binaries). Each run gets
// empty Helm home directories and a kubeconfig that does not exist: nothing is read from this
// machine's Helm setup and no cluster is ever asked.

import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { ensureBinaries } from './cluster.ts'

/** Path of the pinned helm, built on first use (minutes cold, a relink with a warm Go cache). */
export async function helmBinary(log?: (line: string) => void): Promise<string> {
  const paths = await ensureBinaries(['helm'], { ...(log ? { log } : {}), timeoutMs: 15 * 60_000 })
  const path = paths.helm
  if (path === undefined) throw new Error('test/cluster/build.sh built no helm')
  return path
}

export interface NativeRelease {
  readonly release: string
  readonly namespace: string
  /** Written to a values file (`-f`): a JSON value's numbers reach Helm as float64, as HelmRelease values do. */
  readonly values?: Readonly<Record<string, unknown>>
  /** Dotted path → value for --set (typed: integers stay integers); a quoted value goes to --set-string unquoted. */
  readonly set?: Readonly<Record<string, string>>
  readonly kubeVersion?: string
  readonly apiVersions?: readonly string[]
  readonly isUpgrade?: boolean
}

/** What helm printed, or why it failed (its stderr); it never throws for a chart Helm refuses. */
export type NativeOutput = { readonly stdout: string } | { readonly failed: string }

/** Writes a chart's files (paths relative to the directory) under a new temporary directory. */
export function writeTree(files: readonly (readonly [string, string | Uint8Array])[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'hrt-helm-chart-'))
  for (const [path, content] of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), content)
  }
  return dir
}

/** `helm template --include-crds` of a chart directory or archive: manifests, CRDs and hooks. */
export function helmTemplate(binary: string, chart: string, release: NativeRelease): Promise<NativeOutput> {
  const args = ['template', release.release, chart, '--namespace', release.namespace, '--include-crds']
  if (release.kubeVersion !== undefined) args.push('--kube-version', release.kubeVersion)
  for (const api of release.apiVersions ?? []) args.push('--api-versions', api)
  if (release.isUpgrade === true) args.push('--is-upgrade')
  return runHelm(binary, args, release)
}

/** The release `helm install --dry-run=client` would store (JSON): `helm template` prints no NOTES. */
export async function helmInstallDryRun(binary: string, chart: string, release: NativeRelease): Promise<Record<string, unknown> | { readonly failed: string }> {
  if (release.kubeVersion !== undefined || release.apiVersions !== undefined || release.isUpgrade === true) {
    throw new Error('helm install has no --kube-version, --api-versions or --is-upgrade: use helmTemplate')
  }
  const output = await runHelm(binary, ['install', release.release, chart, '--namespace', release.namespace, '--dry-run=client', '--output', 'json'], release)
  return 'failed' in output ? output : (JSON.parse(output.stdout) as Record<string, unknown>)
}

async function runHelm(binary: string, args: string[], release: NativeRelease): Promise<NativeOutput> {
  const home = mkdtempSync(join(tmpdir(), 'hrt-helm-home-'))
  try {
    if (release.values !== undefined) {
      writeFileSync(join(home, 'values.json'), JSON.stringify(release.values))
      args.push('--values', join(home, 'values.json'))
    }
    for (const [path, value] of Object.entries(release.set ?? {})) {
      const quoted = /^(["']).*\1$/s.test(value)
      args.push(quoted ? '--set-string' : '--set', `${path}=${quoted ? value.slice(1, -1) : value}`)
    }
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
      KUBECONFIG: join(home, 'no-kubeconfig'),
    }
    return await new Promise((resolve) => {
      execFile(binary, args, { env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        resolve(error ? { failed: stderr.trim() || error.message } : { stdout })
      })
    })
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}
