// .github/workflows/fleet.yml against what the plan really outputs: each wave's matrix is the
// plan job's output of that wave, the plan job maps it from the action step's output of the
// same name, every key a job reads from `matrix` (cluster, secret) is in every matrix entry the
// plan writes, the kubeconfig comes from the secret the entry names, and each cluster job sits in
// a concurrency group of its own cluster that never cancels a running rollout.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseDocument } from 'yaml'
import { describe, expect, it } from 'vitest'
import { secretName } from '../../src/core/cluster-list.ts'
import type { ClusterPlan, FleetPlan } from '../../src/modes/fleet/fleet-plan.ts'
import { fleetPlanOutputs, waveOutput } from '../../src/modes/fleet/fleet-plan-report.ts'

const root = join(import.meta.dirname, '..', '..')
type Json = Record<string, unknown>
const record = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {})
const yaml = (file: string): Json => record(parseDocument(readFileSync(join(root, file), 'utf8')).toJS())

const workflow = yaml('.github/workflows/fleet.yml')
const jobs = record(workflow['jobs'])
const steps = (job: unknown): Json[] => (Array.isArray(record(job)['steps']) ? (record(job)['steps'] as unknown[]).map(record) : [])
const ours = (step: Json) => typeof step['uses'] === 'string' && /\/helmrelease-trigger@/.test(step['uses'])
const body = (expression: unknown) => /^\$\{\{\s*(.*?)\s*\}\}$/.exec(String(expression))?.[1]

function cluster(name: string, wave: number, releases: number): ClusterPlan {
  const digest = `sha256:${'2'.repeat(64)}` as const
  const sources = [{ id: 'ConfigMap/apps/values' as const, digest, encrypted: false }]
  return {
    name,
    root: `clusters/${name}`,
    secret: secretName(name),
    wave,
    paths: [],
    plan: { sources: [], releases: Array.from({ length: releases }, (_, i) => ({ namespace: 'apps', name: `r${i}`, sources })), problems: [] },
  }
}

// Three waves, one of them (wave 2) without work.
const PLAN: FleetPlan = {
  range: { base: 'a'.repeat(40), head: 'b'.repeat(40), fullSync: false, notes: [] },
  options: { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true, discover: true, paths: ['**/*.yaml'], crossNamespaceTargets: [] },
  waves: 3,
  clusters: [cluster('staging', 1, 2), cluster('canary', 2, 0), cluster('prod-eu', 3, 1), cluster('prod-us', 3, 1)],
}
const outputs = fleetPlanOutputs(PLAN)
const actionOutputs = Object.keys(record(yaml('action.yml')['outputs']))
const waveJobs = Object.keys(jobs).filter((id) => /^wave-\d+$/.test(id))

describe('fleet.yml is fed by the plan', () => {
  const planJob = record(jobs['plan'])
  const planStep = steps(planJob).find(ours) ?? {}

  it('plans once, in the plan job, and saves the plan file it uploads', () => {
    expect(record(planStep['with'])['mode']).toBe('plan')
    const upload = steps(planJob).find((s) => String(s['uses']).startsWith('actions/upload-artifact@'))
    expect(record(upload?.['with'])['path']).toBe(record(planStep['with'])['plan-file'])
  })

  it.each(waveJobs)('%s: its matrix is the plan output of that wave, mapped from the action output of the same name', (id) => {
    const job = record(jobs[id])
    const output = waveOutput(Number(id.slice('wave-'.length)))
    expect(body(record(job['strategy'])['matrix'])).toBe(`fromJSON(needs.plan.outputs.${output})`)
    expect(body(record(planJob['outputs'])[output])).toBe(`steps.${String(planStep['id'])}.outputs.${output}`)
    expect(actionOutputs).toContain(output)
    expect(record(job['strategy'])['fail-fast']).toBe(false)
    expect(body(record(job['strategy'])['max-parallel'])).toBe('inputs.max-parallel')
  })

  it('runs a wave only when the plan gave it a cluster: the condition is true exactly for a matrix with entries', () => {
    for (const id of waveJobs) expect(String(record(jobs[id])['if'])).toContain(`contains(needs.plan.outputs.${id}, '"cluster"')`)
    // The same test as the workflow's contains(): the JSON text holds the key only when an entry exists.
    expect(outputs['wave-1']).toContain('"cluster"')
    expect(outputs['wave-2']).not.toContain('"cluster"')
    expect(JSON.parse(outputs['wave-2'] ?? '')).toEqual({ include: [] })
  })

  it.each(waveJobs)("%s: the cluster's secret, concurrency group and part of the plan come from keys every matrix entry has", (id) => {
    const job = record(jobs[id])
    const step = steps(job).find(ours) ?? {}
    const given = record(step['with'])
    expect(body(given['kubeconfig'])).toBe('secrets[matrix.secret]')
    expect(body(given['cluster'])).toBe('matrix.cluster')
    expect(given['plan-file']).toBe(record(planStep['with'])['plan-file'])
    expect(given['mode']).toBe('trigger')
    const concurrency = record(job['concurrency'])
    expect(String(concurrency['group'])).toMatch(/^[\w-]+\$\{\{\s*matrix\.cluster\s*\}\}$/)
    expect(concurrency['cancel-in-progress']).toBe(false)
    // Every matrix key the job reads exists in each entry the plan writes, with the values meant.
    const read = [...JSON.stringify(job).matchAll(/\bmatrix\.([\w-]+)/g)].map((m) => m[1])
    const entries = [1, 2, 3].flatMap((w) => (JSON.parse(outputs[waveOutput(w)] ?? '') as { include: Json[] }).include)
    expect(entries.map((e) => e['cluster'])).toEqual(['staging', 'prod-eu', 'prod-us'])
    for (const entry of entries) {
      for (const key of read) expect(Object.keys(entry), `matrix.${key}`).toContain(key)
      expect(entry['secret']).toBe(secretName(String(entry['cluster'])))
      expect(entry['secret']).toMatch(/^[A-Z_][A-Z0-9_]*$/)
    }
  })

  it('starts wave n only when the waves before it succeeded or had nothing to do', () => {
    for (const id of waveJobs.filter((w) => w !== 'wave-1')) {
      const n = Number(id.slice('wave-'.length))
      const job = record(jobs[id])
      const earlier = Array.from({ length: n - 1 }, (_, i) => `wave-${i + 1}`)
      expect([job['needs']].flat()).toEqual(['plan', ...earlier])
      for (const e of earlier) expect(String(job['if'])).toContain(`contains(fromJSON('["success", "skipped"]'), needs.${e}.result)`)
    }
  })

  it('gathers every wave into one summary from the same plan file', () => {
    const summary = record(jobs['summary'])
    expect([summary['needs']].flat()).toEqual(['plan', ...waveJobs])
    const step = steps(summary).find(ours) ?? {}
    expect(record(step['with'])['mode']).toBe('fleet-summary')
    expect(record(step['with'])['plan-file']).toBe(record(planStep['with'])['plan-file'])
  })
})
