// A HelmRelease's own spec.driftDetection.ignore rules (JSON pointers with a kustomize-style
// target) are honoured by drift, so fields the team told helm-controller to ignore stay quiet.
import { describe, expect, it } from 'vitest'
import { compareObject } from '../../../../src/modes/drift/compare.ts'
import { fluxIgnoreRules, matchesSelector, pointerSegments, selects } from '../../../../src/modes/drift/flux-ignore.ts'

const deployment = (replicas: number, image: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'apps', labels },
  spec: { replicas, template: { spec: { containers: [{ name: 'app', image }] } } },
})

const hr = (ignore: unknown[]) => ({ metadata: { name: 'web', namespace: 'apps' }, spec: { driftDetection: { mode: 'warn', ignore } } })

function changes(
  rules: ReturnType<typeof fluxIgnoreRules>,
  desired = deployment(2, 'a', { tier: 'web' }),
  live = deployment(3, 'b', { tier: 'web' }),
): string[] {
  const o = { apiVersion: desired.apiVersion, kind: desired.kind, name: 'web', namespace: 'apps', object: desired }
  const own = rules.filter((r) => selects(r.target, o)).map((r) => r.rule)
  return compareObject(desired, live, { ignore: own, scaledByHpa: false }).map((c) => c.path)
}

describe('spec.driftDetection.ignore', () => {
  it('reads JSON pointers, unescaping ~1 and ~0', () => {
    expect(pointerSegments('/metadata/annotations/example.com~1a~0b')).toEqual(['metadata', 'annotations', 'example.com/a~b'])
    expect(pointerSegments('spec')).toBeUndefined()
  })

  it('ignores the paths of a rule without target on every object, list items by index too', () => {
    expect(changes([])).toEqual(['spec.replicas', 'spec.template.spec.containers[name=app].image'])
    expect(changes(fluxIgnoreRules(hr([{ paths: ['/spec/replicas', '/spec/template/spec/containers/0/image'] }])))).toEqual([])
  })

  it('applies a targeted rule only to the objects its kind, name, namespace and selectors select', () => {
    const rule = (target: Record<string, string>) => fluxIgnoreRules(hr([{ paths: ['/spec/replicas'], target }]))
    expect(changes(rule({ kind: 'Deployment', name: 'w.*' }))).not.toContain('spec.replicas')
    expect(changes(rule({ kind: 'StatefulSet' }))).toContain('spec.replicas')
    expect(changes(rule({ group: 'apps', version: 'v1', namespace: 'apps' }))).not.toContain('spec.replicas')
    expect(changes(rule({ namespace: 'other' }))).toContain('spec.replicas')
    expect(changes(rule({ labelSelector: 'tier=web' }))).not.toContain('spec.replicas')
    expect(changes(rule({ labelSelector: 'tier in (api,db)' }))).toContain('spec.replicas')
  })

  it('has no rules when the release sets none', () => {
    expect(fluxIgnoreRules({ spec: {} })).toEqual([])
    expect(fluxIgnoreRules(hr([{ paths: ['not-a-pointer'] }]))).toEqual([])
  })

  it('evaluates equality, set-based and existence label selectors', () => {
    const labels = { tier: 'web', env: 'prod' }
    expect(matchesSelector('tier=web,env==prod', labels)).toBe(true)
    expect(matchesSelector('tier!=web', labels)).toBe(false)
    expect(matchesSelector('tier in (web, api),env notin (dev)', labels)).toBe(true)
    expect(matchesSelector('env,!canary', labels)).toBe(true)
    expect(matchesSelector('canary', labels)).toBe(false)
  })
})
