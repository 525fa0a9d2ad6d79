// The pre-merge diff through the product's own wiring (settings → renderRangeOf → preparePlan →
// predictorOf → planReport → the reports), on real commits of a Flux repository: Flux's kustomize
// and Helm's engine in the sandbox, charts from a loopback Helm repository and from the checkout.
// Each case is a change a reviewer needs to see, or a hostile or broken one that must stay one
// problem on one release.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { stringify } from 'yaml'
import { createGitReader } from '../../src/git/reader.ts'
import { renderRangeOf } from '../../src/modes/rendering.ts'
import { planReport, preparePlan } from '../../src/modes/trigger/pipeline.ts'
import { predictorOf } from '../../src/modes/trigger/predict.ts'
import { summaryMarkdown, textReport, triggerResult } from '../../src/modes/trigger/report.ts'
import { triggerVerdict } from '../../src/modes/trigger/verdict.ts'
import type { PredictedDiff } from '../../src/core/predicted-diff.ts'
import type { TriggerReport } from '../../src/engine/result.ts'
import { createSandbox } from '../../src/sandbox/sandbox.ts'
import { parseSettings, triggerRunOptionsOf } from '../../src/settings.ts'
import { chartFiles, DEMO_CONFIGMAP_TEMPLATE, startChartServer, type ChartServer } from '../../test/support/chart.ts'
import { bootstrapText } from '../../test/support/flux.ts'
import { kustomization } from '../../test/support/gitops.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { webapp } from '../../test/support/helm-corpus/webapp.ts'
import { openReportPage } from '../../test/support/report-page.ts'

const REPOSITORY = 'acme/fleet'
const sandbox = createSandbox()
const repos: Repo[] = []
const caches: string[] = []
let charts: ChartServer

beforeAll(async () => {
  charts = await startChartServer({
    charts: [
      { name: 'demo', version: '0.1.0', values: { greeting: 'hello' } },
      { name: 'demo', version: '0.2.0', values: { greeting: 'hello' }, templates: { 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE, 'service.yaml': SERVICE } },
      { name: 'random', version: '1.0.0', templates: { 'secret.yaml': RANDOM_SECRET, 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE } },
      { name: 'broken', version: '1.0.0', values: {}, templates: { 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE } },
      { name: 'broken', version: '1.1.0', values: { fail: 'the template refuses this version' }, templates: { 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE } },
      { name: 'nosy', version: '1.0.0', templates: { 'configmap.yaml': NOSY } },
    ],
  })
})
afterAll(async () => {
  await charts.close()
  await sandbox.close()
})
afterEach(() => {
  for (const repo of repos.splice(0)) repo.cleanup()
  for (const dir of caches.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const SERVICE = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    app: {{ .Release.Name }}
  ports:
    - name: http
      port: 80
`

// A chart that generates a password on every render, as many do (randAlphaNum, no lookup).
const RANDOM_SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-password
stringData:
  password: {{ randAlphaNum 16 | quote }}
  user: {{ .Values.user | default "admin" | quote }}
`

// A template that tries to read the runner's files and the cluster.
const NOSY = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  passwd: {{ .Files.Get "../../../../etc/passwd" | quote }}
  hostname: {{ .Files.Get "/etc/hostname" | quote }}
  lookup: {{ lookup "v1" "Secret" "kube-system" "" | toJson | quote }}
`

interface ReleaseOptions {
  readonly chart?: string
  readonly version?: string
  readonly repository?: string
  readonly values?: Record<string, unknown>
  readonly valuesFrom?: readonly Record<string, unknown>[]
  readonly postRenderers?: readonly unknown[]
  readonly sourceRef?: Record<string, unknown>
}

function release(options: ReleaseOptions = {}): string {
  return stringify({
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: { name: 'podinfo', namespace: 'apps' },
    spec: {
      interval: '1h',
      chart: {
        spec: {
          chart: options.chart ?? 'demo',
          version: options.version ?? '*',
          sourceRef: options.sourceRef ?? { kind: 'HelmRepository', name: options.repository ?? 'charts' },
        },
      },
      valuesFrom: options.valuesFrom ?? [{ kind: 'ConfigMap', name: 'podinfo-values' }],
      ...(options.values === undefined ? {} : { values: options.values }),
      ...(options.postRenderers === undefined ? {} : { postRenderers: options.postRenderers }),
    },
  })
}

function repositoryFile(url: string, name = 'charts'): string {
  return stringify({ apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'HelmRepository', metadata: { name, namespace: 'apps' }, spec: { url, interval: '1h' } })
}

/** clusters/demo bootstrapped on this repository; apps/ holds the release, its values (a generated ConfigMap) and the HelmRepository. */
function fluxRepository(files: Record<string, string> = {}): Record<string, string> {
  return {
    'clusters/demo/flux-system/gotk-sync.yaml': bootstrapText(`https://github.com/${REPOSITORY}`, './clusters/demo'),
    'clusters/demo/apps.yaml': stringify({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: 'apps', namespace: 'flux-system' },
      spec: { interval: '1h', path: './apps', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
    }),
    // The chart source sits in a Kustomization of its own, which the changes below never touch.
    'clusters/demo/sources.yaml': stringify({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: 'sources', namespace: 'flux-system' },
      spec: { interval: '1h', path: './sources', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
    }),
    'sources/repository.yaml': repositoryFile(charts.url),
    'apps/values.yaml': 'greeting: hello\n',
    'apps/release.yaml': release(),
    'apps/kustomization.yaml': kustomization({
      resources: ['release.yaml'],
      configMapGenerator: [{ name: 'podinfo-values', namespace: 'apps', files: ['values.yaml'], options: { disableNameSuffixHash: true } }],
    }),
    ...files,
  }
}

interface Run {
  readonly report: TriggerReport
  readonly predicted: (name?: string) => PredictedDiff
  readonly cache: string
}

async function plan(before: Record<string, string>, after: Record<string, string>, event = 'push', cache?: string): Promise<Run> {
  const repo = createRepo('hrt-diff-')
  repos.push(repo)
  repo.write(before)
  const base = repo.commit('base')
  for (const [path, text] of Object.entries(after)) if (text === '') repo.remove(path)
  repo.write(Object.fromEntries(Object.entries(after).filter(([, text]) => text !== '')))
  const head = repo.commit('head')
  const chartCache = cache ?? mkdtempSync(join(tmpdir(), 'hrt-charts-'))
  if (cache === undefined) caches.push(chartCache)
  const settings = parseSettings((name) => ({ 'chart-cache': chartCache, mode: 'plan' })[name] ?? '')
  const git = await createGitReader({ cwd: repo.dir })
  const render = renderRangeOf(settings, git, { env: { GITHUB_REPOSITORY: REPOSITORY }, sandbox, scope: 'all' })
  const context = {
    eventName: event,
    event: { before: base, after: head, pull_request: event === 'pull_request' ? { base: { sha: base }, head: { sha: head }, fromFork: true } : undefined },
    sha: head,
    runUrl: undefined,
    refused: undefined,
  }
  const options = triggerRunOptionsOf(settings)
  const prepared = await preparePlan(options, context, git, render)
  const predicted = await predictorOf(settings, git, sandbox, event === 'pull_request')(prepared)
  const report = planReport(prepared, options, 'plan only', predicted)
  return {
    report,
    cache: chartCache,
    predicted: (name = 'podinfo') => {
      const found = report.results.find((r) => r.name === name)?.predicted
      if (found === undefined) throw new Error(`no prediction for ${name}: ${JSON.stringify(report.results)}`)
      return found
    },
  }
}

function shown(d: PredictedDiff): Exclude<PredictedDiff, { notPredicted: string }> {
  if ('notPredicted' in d) throw new Error(`not predicted: ${d.notPredicted}`)
  return d
}

describe('the pre-merge diff of a HelmRelease', () => {
  it('shows a values change as the ConfigMap path the chart writes it to, and the values path, with the chart from a Helm repository in an untouched Kustomization', async () => {
    const run = await plan(fluxRepository(), { 'apps/values.yaml': 'greeting: bonjour\n' })
    const d = shown(run.predicted())
    expect(d.chart).toBe('demo@0.2.0')
    expect(d.headline).toEqual(['changes ConfigMap apps/podinfo'])
    const configMap = d.objects.find((o) => o.object === 'ConfigMap apps/podinfo')
    expect(configMap?.paths.find((p) => p.path === 'data.greeting')).toMatchObject({ change: 'changed', before: 'hello', after: 'bonjour' })
    expect(d.values).toEqual([{ path: 'greeting', change: 'changed', before: 'hello', after: 'bonjour' }])
    expect(d.nondeterministic).toEqual([])
    // The reports a reviewer reads: the comment (through the check's verdict), the summary and the CLI.
    const verdict = triggerVerdict(run.report, { failOn: 'error', runUrl: undefined })
    expect(verdict.comment).toContain('### What the upgrade will change')
    expect(verdict.comment).toContain('- <code>apps/podinfo</code> <code>demo&#64;0.2.0</code>: changes ConfigMap apps/podinfo')
    expect(verdict.comment).toContain('changed <code>data.greeting</code>: <code>hello</code> → <code>bonjour</code>')
    expect(summaryMarkdown(run.report)).toContain('changed <code>data.greeting</code>: <code>hello</code> → <code>bonjour</code>')
    expect(textReport(run.report)).toContain('predicted apps/podinfo demo@0.2.0: changes ConfigMap apps/podinfo')
    const output = JSON.parse(triggerResult(run.report, 'error').outputs['diff'] ?? '[]') as unknown[]
    expect(output).toEqual([expect.objectContaining({ namespace: 'apps', name: 'podinfo', chart: 'demo@0.2.0', headline: ['changes ConfigMap apps/podinfo'] })])
    // The archive is kept for the next run, by its identity.
    expect(readdirSync(run.cache).filter((f) => f.endsWith('.tgz')).length).toBeGreaterThan(0)
  })

  it('shows a chart bump: the new Service, the chart label folded, the chart named from → to', async () => {
    const run = await plan(fluxRepository({ 'apps/release.yaml': release({ version: '0.1.0' }) }), { 'apps/release.yaml': release({ version: '0.2.0' }) })
    const d = shown(run.predicted())
    expect(d.chart).toBe('demo@0.1.0 → demo@0.2.0')
    expect(d.headline).toEqual(['adds Service apps/podinfo', 'changes ConfigMap apps/podinfo'])
    // The demo chart writes its version and the release revision into annotations: both change.
    expect(d.objects.find((o) => o.object === 'ConfigMap apps/podinfo')?.paths.map((p) => [p.path, p.before, p.after])).toEqual([
      ['metadata.annotations["demo.helmrelease-trigger.test/chart-version"]', '0.1.0', '0.2.0'],
      ['metadata.annotations["demo.helmrelease-trigger.test/revision"]', '1', '2'],
    ])
  })

  it('applies postRenderers through the sandboxed kustomize, then helm-controller’s origin labels', async () => {
    const patch = {
      patch: stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'podinfo', labels: { tier: 'web' } } }),
      target: { kind: 'ConfigMap' },
    }
    const run = await plan(fluxRepository(), { 'apps/release.yaml': release({ postRenderers: [{ kustomize: { patches: [patch] } }] }) })
    const d = shown(run.predicted())
    expect(d.objects.find((o) => o.object === 'ConfigMap apps/podinfo')?.paths).toContainEqual({ path: 'metadata.labels.tier', change: 'added', after: 'web' })
    // A JSON patch adding under labels the chart never wrote fails in helm-controller too (its origin labels come after): said, not hidden.
    const failing = { patch: stringify([{ op: 'add', path: '/metadata/labels/tier', value: 'web' }]), target: { kind: 'ConfigMap' } }
    const broken = await plan(fluxRepository(), { 'apps/release.yaml': release({ postRenderers: [{ kustomize: { patches: [failing] } }] }) })
    expect(broken.predicted()).toEqual({ notPredicted: expect.stringContaining('error while running post render on files: add operation does not apply') })
  })

  it('composes values as helm-controller does: valuesFrom in order, a targetPath integer typed by Helm’s --set rules, inline values last', async () => {
    const valuesFrom = [
      { kind: 'ConfigMap', name: 'podinfo-values' },
      { kind: 'ConfigMap', name: 'podinfo-values', valuesKey: 'replicas', targetPath: 'replicas' },
    ]
    const before = fluxRepository({
      'apps/release.yaml': release({ valuesFrom, values: { greeting: 'inline' } }),
      'apps/kustomization.yaml': kustomization({
        resources: ['release.yaml'],
        configMapGenerator: [
          { name: 'podinfo-values', namespace: 'apps', files: ['values.yaml'], literals: ['replicas=1000000'], options: { disableNameSuffixHash: true } },
        ],
      }),
    })
    const run = await plan(before, { 'apps/values.yaml': 'greeting: bonjour\nextra: 1\n' })
    const d = shown(run.predicted())
    // Inline values win over valuesFrom; the targetPath number stays an integer (no 1e+06).
    expect(d.values).toEqual([{ path: 'extra', change: 'added', after: '1' }])
    const paths = d.objects.find((o) => o.object === 'ConfigMap apps/podinfo')?.paths ?? []
    expect(paths.find((p) => p.path === 'data.extra')?.after).toBe('1')
    expect(paths.find((p) => p.path === 'data["values.yaml"]')?.lines).toEqual(['+ extra: 1'])
    // The targetPath number, given to Helm as int64: not 1e+06.
    expect(JSON.stringify(run.report.results)).not.toContain('1e+06')
  })

  it('reads a chart from this repository’s checkout (a GitRepository chart) and says a template edit without a version bump is not upgraded', async () => {
    const chart = Object.fromEntries(chartFiles({ name: 'local', version: '1.0.0' }).map((f) => [`charts/${f.path}`, String(f.content)]))
    const sourceRef = { kind: 'GitRepository', name: 'flux-system', namespace: 'flux-system' }
    const before = fluxRepository({ ...chart, 'apps/release.yaml': release({ chart: './charts/local', sourceRef }) })
    const edited = { 'charts/local/templates/configmap.yaml': DEMO_CONFIGMAP_TEMPLATE.replace('\ndata:', '\ndata:\n  edited: "yes"') }
    const run = await plan(before, { ...edited, 'apps/values.yaml': 'greeting: bonjour\n' })
    const d = shown(run.predicted())
    expect(d.chart).toBe('local@1.0.0')
    expect(d.objects.find((o) => o.object === 'ConfigMap apps/podinfo')?.paths.map((p) => p.path)).toEqual([
      'data.edited',
      'data.greeting',
      'data["values.yaml"]',
      'metadata.annotations["demo.helmrelease-trigger.test/revision"]',
    ])
    expect(d.notes.join(' ')).toContain("the chart's own edits do not reach the cluster: its Chart.yaml version stays '1.0.0'")
  })

  it('marks what differs between two renders of head as non-deterministic and never shows it, and shows a rendered Secret by key only', async () => {
    const run = await plan(fluxRepository({ 'apps/release.yaml': release({ chart: 'random' }) }), { 'apps/values.yaml': 'user: root\n' })
    const d = shown(run.predicted())
    expect(d.nondeterministic).toEqual(['Secret apps/podinfo-password stringData.password'])
    expect(d.objects.find((o) => o.object === 'Secret apps/podinfo-password')?.paths).toEqual([{ path: 'stringData.user', change: 'changed' }])
    expect(JSON.stringify(d.objects)).not.toContain('stringData.password')
  })

  it('a render that fails on one side is that one problem on that release, never a diff of everything', async () => {
    const run = await plan(fluxRepository({ 'apps/release.yaml': release({ chart: 'broken', version: '1.0.0' }) }), {
      'apps/release.yaml': release({ chart: 'broken', version: '1.1.0' }),
    })
    const d = run.predicted()
    expect(d).toEqual({ notPredicted: expect.stringMatching(/^the chart: .*the template refuses this version/) })
    expect(triggerVerdict(run.report, { failOn: 'error', runUrl: undefined }).comment).toContain('- <code>apps/podinfo</code>: not predicted: the chart&#58;')
  })

  it('gives a hostile template no file of the runner and no cluster: .Files outside the chart and lookup are empty, and says lookup was empty', async () => {
    const run = await plan(fluxRepository({ 'apps/release.yaml': release({ chart: 'nosy' }) }), { 'apps/values.yaml': 'greeting: bonjour\n' })
    const d = shown(run.predicted())
    expect(d.notes).toContain('the chart calls `lookup`, which reads nothing outside the cluster: what it would read renders as absent')
    expect(JSON.stringify(run.report)).not.toMatch(/root:x:0:0/)
  })
})

describe('the fork rule and Secrets', () => {
  let requests: string[] = []
  let other: Server
  let otherUrl = ''
  beforeAll(async () => {
    other = createServer((req, res) => {
      requests.push(req.url ?? '')
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => other.close(() => resolve())))

  it('on a pull request, never fetches from a Helm repository URL the base commit does not name, and says so', async () => {
    requests = []
    const after = { 'sources/repository.yaml': repositoryFile(otherUrl) }
    const run = await plan(fluxRepository(), { ...after, 'apps/values.yaml': 'greeting: bonjour\n' }, 'pull_request')
    expect(run.predicted()).toEqual({ notPredicted: expect.stringContaining('is not in the base commit') })
    expect(requests).toEqual([])
    // The same commit pushed (a trusted run) does fetch it.
    await plan(fluxRepository(), { ...after, 'apps/values.yaml': 'greeting: bonjour\n' }, 'push')
    expect(requests).toEqual(['/index.yaml'])
  })

  it('a release reading a SOPS-encrypted Secret renders without it, partial, every change shown by path only', async () => {
    const secret = stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'podinfo-secret', namespace: 'apps' },
      stringData: { 'values.yaml': 'ENC[AES256_GCM,data:abc,iv:def,tag:ghi,type:str]' },
      sops: { age: [{ recipient: 'age1x', enc: 'x' }], lastmodified: '2024-01-01T00:00:00Z', mac: 'ENC[x]', version: '3.8.1' },
    })
    const valuesFrom = [
      { kind: 'ConfigMap', name: 'podinfo-values' },
      { kind: 'Secret', name: 'podinfo-secret' },
    ]
    const before = fluxRepository({
      'apps/secret.yaml': secret,
      'apps/release.yaml': release({ valuesFrom }),
      'apps/kustomization.yaml': kustomization({
        resources: ['release.yaml', 'secret.yaml'],
        configMapGenerator: [{ name: 'podinfo-values', namespace: 'apps', files: ['values.yaml'], options: { disableNameSuffixHash: true } }],
      }),
    })
    const run = await plan(before, { 'apps/values.yaml': 'greeting: bonjour\n' })
    const d = shown(run.predicted())
    expect(d.valuesHidden).toBe(true)
    expect(d.notes[0]).toMatch(/^partial: rendered without the values of the encrypted Secret 'podinfo-secret'/)
    expect(d.values).toEqual([{ path: 'greeting', change: 'changed' }])
    expect(JSON.stringify(run.report.results)).not.toContain('bonjour')
  })
})

describe('the comment a reviewer reads', () => {
  it('lays out the pre-merge diff of a pull request touching two releases in a real browser (the README’s screenshot)', async () => {
    const chart = Object.fromEntries(webapp.files.map(([path, content]) => [`charts/webapp/${path}`, String(content)]))
    const web = (values: Record<string, unknown>): string =>
      stringify({
        apiVersion: 'helm.toolkit.fluxcd.io/v2',
        kind: 'HelmRelease',
        metadata: { name: 'web', namespace: 'apps' },
        spec: {
          interval: '1h',
          chart: { spec: { chart: './charts/webapp', sourceRef: { kind: 'GitRepository', name: 'flux-system', namespace: 'flux-system' } } },
          values,
        },
      })
    const before = fluxRepository({
      ...chart,
      'apps/web.yaml': web({ replicaCount: 2, image: { tag: '2.0.1' } }),
      'apps/kustomization.yaml': kustomization({
        resources: ['release.yaml', 'web.yaml'],
        configMapGenerator: [{ name: 'podinfo-values', namespace: 'apps', files: ['values.yaml'], options: { disableNameSuffixHash: true } }],
      }),
      'apps/release.yaml': release({ version: '0.1.0' }),
    })
    const run = await plan(before, {
      'apps/web.yaml': web({ replicaCount: 3, image: { tag: '2.1.0' }, config: { logLevel: 'debug' } }),
      'apps/release.yaml': release({ version: '0.2.0' }),
      'apps/values.yaml': 'greeting: bonjour\n',
    })
    const verdict = triggerVerdict(run.report, { failOn: 'error', runUrl: 'https://github.example/acme/fleet/actions/runs/4242' })
    const browser = await openReportPage()
    try {
      await browser.show({ 'Pull-request comment': verdict.comment })
      // Zero-width spaces keep GitHub from linking an @ or a #: not part of what is read.
      const items = (await browser.page.$$eval('li', (li) => li.map((l) => l.textContent ?? ''))).map((t) => t.replace(/\u200b/g, ''))
      const web = 'apps/web webapp@1.2.3: images: webapp ghcr.io/acme/webapp:2.0.1 → ghcr.io/acme/webapp:2.1.0; replicas: Deployment apps/web-webapp 2 → 3'
      expect(items.some((t) => t.startsWith(`${web}; rolls out Deployment apps/web-webapp`))).toBe(true)
      // The chart did not change: no word about its edits.
      expect(items.join('\n')).not.toContain('do not reach the cluster')
      expect(items.some((t) => t.startsWith('apps/podinfo demo@0.1.0 → demo@0.2.0: adds Service apps/podinfo'))).toBe(true)
      const artifacts = join(import.meta.dirname, '..', '..', 'artifacts')
      mkdirSync(artifacts, { recursive: true })
      await browser.screenshot(join(artifacts, 'predicted-diff-comment.png'))
      expect(existsSync(join(artifacts, 'predicted-diff-comment.png'))).toBe(true)
    } finally {
      await browser.close()
    }
  })
})
