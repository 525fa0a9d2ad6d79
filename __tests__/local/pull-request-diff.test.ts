// The pre-merge diff through the bundled action, run as the runner runs it on a fork's pull
// request: what the upgrade will change is in the job summary and the `diff` output; a chart is
// fetched only from a Helm repository URL the base commit already names (a tarpit named by the
// pull request sees no request); a release reading a SOPS-encrypted Secret is rendered without
// it, said to be partial, and nothing of its values is shown.

import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { startChartServer, type ChartServer } from '../../test/support/chart.ts'
import { bootstrapText, repositoryKustomization } from '../../test/support/flux.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 })

let repo: Repo
let base: string
let charts: ChartServer
let tarpit: Server
let tarpitUrl = ''
const requests: string[] = []
const sockets = new Set<Socket>()
const cache = mkdtempSync(join(tmpdir(), 'hrt-chart-cache-'))

const SECRET_VALUE = 'ENC[AES256_GCM,data:c2VjcmV0,iv:aXY=,tag:dGFn,type:str]'

function release(valuesFrom: readonly Record<string, string>[]): string {
  return stringify({
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: { name: 'web', namespace: 'apps' },
    spec: { interval: '1h', chart: { spec: { chart: 'demo', version: '0.1.0', sourceRef: { kind: 'HelmRepository', name: 'charts' } } }, valuesFrom },
  })
}

beforeAll(async () => {
  charts = await startChartServer({ charts: [{ name: 'demo', version: '0.1.0', values: { greeting: 'hello' } }] })
  tarpit = createServer((req) => requests.push(`${req.method} ${req.url}`))
  tarpit.on('connection', (socket) => {
    requests.push('connection')
    sockets.add(socket)
  })
  await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.1', resolve))
  tarpitUrl = `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}`
  repo = createRepo('hrt-pr-diff-')
  repo.write({
    'clusters/prod/flux-system/gotk-sync.yaml': bootstrapText('https://github.example/acme/fleet', './clusters/prod'),
    'clusters/prod/apps.yaml': repositoryKustomization('apps', './apps'),
    'apps/kustomization.yaml':
      'resources: [release.yaml, repository.yaml, secret.yaml]\nconfigMapGenerator: [{name: web-values, namespace: apps, files: [values.yaml], options: {disableNameSuffixHash: true}}]\n',
    'apps/repository.yaml': stringify({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'HelmRepository',
      metadata: { name: 'charts', namespace: 'apps' },
      spec: { url: charts.url },
    }),
    'apps/secret.yaml': stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'web-secret', namespace: 'apps' },
      stringData: { 'values.yaml': SECRET_VALUE },
      sops: {
        age: [{ recipient: 'age1example', enc: 'x' }],
        lastmodified: '2024-01-01T00:00:00Z',
        mac: 'ENC[AES256_GCM,data:bWFj,type:str]',
        version: '3.8.1',
      },
    }),
    'apps/release.yaml': release([{ kind: 'ConfigMap', name: 'web-values' }]),
    'apps/values.yaml': 'greeting: hello\n',
  })
  base = repo.commit('the fleet')
})

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await new Promise<void>((resolve) => tarpit.close(() => resolve()))
  await charts.close()
  repo.cleanup()
  rmSync(cache, { recursive: true, force: true })
})

async function forkPullRequest(files: Record<string, string>): Promise<ActionRun> {
  repo.git('checkout', '-q', '--detach', base)
  repo.write(files)
  const head = repo.commit('a pull request')
  return runAction({
    workspace: repo.dir,
    eventName: 'pull_request',
    event: {
      number: 7,
      pull_request: { number: 7, base: { sha: base, repo: { full_name: 'acme/fleet' } }, head: { sha: head, repo: { full_name: 'mallory/fleet' } } },
    },
    sha: head,
    inputs: { 'chart-cache': cache, 'fail-on': 'never' },
  })
}

interface DiffEntry {
  readonly name: string
  readonly chart?: string
  readonly headline?: readonly string[]
  readonly notPredicted?: string
  readonly valuesHidden?: boolean
  readonly notes?: readonly string[]
  readonly values?: readonly { path: string; change: string; before?: string; after?: string }[]
}

const diffOf = (run: ActionRun): DiffEntry[] => JSON.parse(run.outputs['diff'] ?? '[]') as DiffEntry[]

describe('the pre-merge diff on a fork’s pull request, through the bundled action', () => {
  it('shows what the upgrade will change in the summary and the diff output, with the chart from the base’s Helm repository, kept in chart-cache', async () => {
    const run = await forkPullRequest({ 'apps/values.yaml': 'greeting: bonjour\n' })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(diffOf(run)).toEqual([expect.objectContaining({ name: 'web', chart: 'demo@0.1.0', headline: ['changes ConfigMap apps/web'] })])
    expect(run.summary).toContain('### What the upgrade will change')
    expect(run.summary).toContain('changed <code>data.greeting</code>: <code>hello</code> → <code>bonjour</code>')
    expect(readdirSync(cache).filter((f) => f.endsWith('.tgz')).length).toBeGreaterThan(0)
  })

  it('never fetches a chart from a Helm repository URL the pull request brings, and says why on that release', async () => {
    const run = await forkPullRequest({
      'apps/values.yaml': 'greeting: bonjour\n',
      'apps/repository.yaml': stringify({
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: 'HelmRepository',
        metadata: { name: 'charts', namespace: 'apps' },
        spec: { url: tarpitUrl },
      }),
    })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(diffOf(run)).toEqual([{ namespace: 'apps', name: 'web', notPredicted: expect.stringContaining('is not in the base commit') }])
    expect(requests).toEqual([])
  })

  it('renders a release reading a SOPS-encrypted Secret without it: partial, every change by path only, no value anywhere', async () => {
    const run = await forkPullRequest({
      'apps/values.yaml': 'greeting: bonjour\n',
      'apps/release.yaml': release([
        { kind: 'ConfigMap', name: 'web-values' },
        { kind: 'Secret', name: 'web-secret' },
      ]),
    })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    const [entry] = diffOf(run)
    expect(entry).toMatchObject({ name: 'web', valuesHidden: true, values: [{ path: 'greeting', change: 'changed' }] })
    expect(entry?.notes?.[0]).toMatch(/^partial: rendered without the values of the encrypted Secret 'web-secret'/)
    const everything = [run.stdout, run.stderr, run.summary, run.outputs['diff'] ?? ''].join('\n')
    expect(everything).not.toContain('c2VjcmV0')
    expect(run.outputs['diff']).not.toContain('bonjour')
  })
})
