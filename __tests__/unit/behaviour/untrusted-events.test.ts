// Untrusted events: a pull request (a fork's above all) never gets cluster writes. The rule is
// one pure function (clusterRefused); the engine is driven with random inputs to show it
// never even connects for a fork's pull request, whatever the inputs say.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ConfigurationError } from '../../../src/lib/errors.ts'
import { parseEvent, type GitHubEventLike } from '../../../src/github/event.ts'
import { clusterRefused } from '../../../src/github/policy.ts'
import { parseSettings } from '../../../src/settings.ts'
import { runTrigger } from '../../../src/modes/trigger/pipeline.ts'
import { FakeCluster, FakeClock, FakeGit } from '../../../test/support/fakes.ts'

const PR_EVENTS = ['pull_request', 'pull_request_target', 'pull_request_review', 'pull_request_review_comment'] as const
const pr = (fromFork: boolean): GitHubEventLike => ({ pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork } })

describe('clusterRefused', () => {
  it.each(PR_EVENTS)('%s from a fork: refused whatever allow-pull-requests says', (eventName) => {
    for (const allow of [false, true]) expect(clusterRefused(eventName, pr(true), allow)).toContain('a fork never gets cluster writes')
  })

  it.each(PR_EVENTS)('%s without a pull_request in the payload counts as unknown origin: refused', (eventName) => {
    expect(clusterRefused(eventName, {}, true)).toContain('from a fork (or of unknown origin)')
  })

  it.each(PR_EVENTS)('%s from the repository itself: plan only unless allow-pull-requests', (eventName) => {
    expect(clusterRefused(eventName, pr(false), false)).toContain('set allow-pull-requests: true')
    expect(clusterRefused(eventName, pr(false), true)).toBeUndefined()
  })

  it('any other event carrying a fork pull request is refused too; push, schedule and dispatch are not', () => {
    expect(clusterRefused('issue_comment', pr(true), true)).toContain('a fork never gets cluster writes')
    for (const eventName of ['push', 'schedule', 'workflow_dispatch']) expect(clusterRefused(eventName, { before: 'a', after: 'b' }, false)).toBeUndefined()
  })

  it('reads the origin from the real payload shape: only a head repository equal to the base one is trusted', () => {
    const payload = (head: unknown) =>
      JSON.stringify({
        pull_request: { base: { sha: 'a', repo: { full_name: 'acme/fleet' } }, head: { sha: 'b', ...(head === undefined ? {} : { repo: head }) } },
      })
    const refused = (head: unknown) => clusterRefused('pull_request_target', parseEvent(payload(head), 'event.json'), true)
    expect(refused({ full_name: 'acme/fleet' })).toBeUndefined()
    for (const head of [{ full_name: 'mallory/fleet' }, { full_name: 'ACME/fleet' }, null, undefined, { full_name: 7 }, 'acme/fleet']) {
      expect(refused(head), JSON.stringify(head)).toContain('a fork never gets cluster writes')
    }
  })
})

describe('clusterRefused reads who started the run from the payload, not the event name (audit F4)', () => {
  const refused = (eventName: string, payload: unknown, allow = true) => clusterRefused(eventName, parseEvent(JSON.stringify(payload), 'event.json'), allow)
  const run = (event: string, head: unknown) => ({ workflow_run: { event, head_sha: 'f0', head_repository: head }, repository: { full_name: 'acme/app' } })

  it('workflow_run after a fork pull request run (the audit reproducer): refused whatever the inputs', () => {
    for (const allow of [false, true]) {
      expect(refused('workflow_run', run('pull_request', { full_name: 'evil/app' }), allow)).toBe(
        'workflow_run event after a pull_request run from a fork (or of unknown origin): plan only, whatever the inputs; a fork never gets cluster writes',
      )
    }
  })

  it.each([
    ['a push in a fork', run('push', { full_name: 'evil/app' })],
    ['no head repository', run('pull_request_target', undefined)],
    ['a head repository without a name', run('push', { name: 'app' })],
    ['an issue_comment on a pull request', { issue: { pull_request: { url: 'u' } }, comment: { body: 'x' }, repository: { full_name: 'acme/app' } }],
  ])('%s: refused as a fork', (_, payload) => {
    expect(refused(payload === undefined ? 'x' : 'workflow_run', payload)).toContain('a fork never gets cluster writes')
  })

  it("a workflow_run after the repository's own pull request run: plan only unless allow-pull-requests", () => {
    expect(refused('workflow_run', run('pull_request', { full_name: 'acme/app' }), false)).toContain('set allow-pull-requests: true')
    expect(refused('workflow_run', run('pull_request', { full_name: 'acme/app' }), true)).toBeUndefined()
  })

  it('a workflow_run after a push or a schedule of the repository, and an issue_comment on an issue: allowed', () => {
    expect(refused('workflow_run', run('push', { full_name: 'acme/app' }), false)).toBeUndefined()
    expect(refused('workflow_run', run('schedule', { full_name: 'acme/app' }), false)).toBeUndefined()
    expect(refused('issue_comment', { issue: { number: 1 }, comment: { body: 'x' }, repository: { full_name: 'acme/app' } }, false)).toBeUndefined()
  })
})

describe('trigger on a fork pull request with random inputs', () => {
  const configMap = (value: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-values
  namespace: apps
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: app
data:
  values.yaml: "replicas: ${value}"
`
  const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
  const bool = fc.oneof({ weight: 19, arbitrary: fc.constantFrom('true', 'false', '') }, { weight: 1, arbitrary: fc.constantFrom('TRUE', 'yes') })
  const inputs = fc.record(
    {
      'allow-pull-requests': bool,
      apply: bool,
      force: bool,
      reset: bool,
      'dry-run': bool,
      wait: bool,
      'wait-for-apply': bool,
      'full-sync': bool,
      discover: bool,
      base: fc.constantFrom('', 'a'),
      head: fc.constantFrom('', 'b'),
      kubeconfig: fc.constantFrom('', 'apiVersion: v1\nkind: Config\n'),
      'fail-on': fc.constantFrom('error', 'never'),
    },
    { requiredKeys: [] },
  )

  it('never connects, so never writes (1,000 cases)', async () => {
    let planned = 0
    await fc.assert(
      fc.asyncProperty(inputs, fc.constantFrom(...PR_EVENTS), fc.boolean(), async (given, eventName, unknownOrigin) => {
        let settings
        try {
          settings = parseSettings((name) => given[name as keyof typeof given] ?? '')
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigurationError)
          return
        }
        const cluster = new FakeCluster().addRelease('apps', 'app')
        let connected = false
        const event = unknownOrigin ? {} : pr(true)
        const report = await runTrigger(
          settings,
          // The entry's verdict, as the action decides it once for the run.
          { eventName, event, sha: 'b', runUrl: undefined, refused: clusterRefused(eventName, event, settings.allowPullRequests) },
          {
            git,
            connect: async () => {
              connected = true
              return cluster
            },
            clock: new FakeClock(),
            log: { info: () => undefined, warning: () => undefined },
          },
        ).catch((error: unknown) => {
          // A range that cannot be resolved is a configuration error, never a write.
          expect(error).toBeInstanceOf(ConfigurationError)
          return undefined
        })
        expect(connected).toBe(false)
        expect(cluster.patches).toEqual([])
        if (report !== undefined) expect(report.planOnly).toContain('a fork never gets cluster writes')
        if (report !== undefined) planned++
      }),
      { numRuns: 1_000 },
    )
    // Most cases got past the inputs and were planned (invalid values end in ConfigurationError).
    expect(planned).toBeGreaterThan(400)
  })
})
