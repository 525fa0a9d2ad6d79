// .github/workflows/fleet.yml against what the plan really outputs: each wave's matrix is the
// plan job's output of that wave, the plan job maps it from the action step's output of the
// same name, every key a job reads from `matrix` (cluster, secret) is in every matrix entry the
// plan writes, the kubeconfig comes from the secret the entry names, and each cluster job sits in
// a concurrency group of its own cluster that never cancels a running rollout.

import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseDocument } from 'yaml'
import { afterAll, describe, expect, it } from 'vitest'
import { secretName } from '../../src/core/cluster-list.ts'
import type { ClusterPlan, FleetPlan } from '../../src/modes/fleet/fleet-plan.ts'
import { fleetPlanOutputs, waveOutput } from '../../src/modes/fleet/fleet-plan-report.ts'
import { readResultFile } from '../../src/modes/fleet/fleet-result.ts'
import { gatherResults } from '../../src/modes/fleet/rollout.ts'

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

describe('fleet.yml: a cluster job that fails leaves a result', () => {
  const temp = mkdtempSync(join(tmpdir(), 'hrt-fleet-workflow-'))
  afterAll(() => rmSync(temp, { recursive: true, force: true }))
  const entry = { cluster: 'prod-eu', secret: secretName('prod-eu'), wave: 3 }

  /** The fallback step of a wave job, run by bash as the runner runs it, with the given outcomes of the steps before it. */
  function runFallback(job: Json, outcomes: Readonly<Record<string, string>>): string {
    const all = steps(job)
    const step = all.find((s) => String(s['if']).includes('failure()')) ?? {}
    const values: Record<string, string> = { 'runner.temp': temp, ...Object.fromEntries(Object.entries(entry).map(([k, v]) => [`matrix.${k}`, String(v)])) }
    for (const s of all) if (typeof s['id'] === 'string') values[`steps.${s['id']}.outcome`] = outcomes[s['id']] ?? 'success'
    const env = Object.fromEntries(
      Object.entries(record(step['env'])).map(([name, value]) => [
        name,
        String(value).replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_, expression: string) => {
          const v = values[expression]
          if (v === undefined) throw new Error(`${name} reads ${expression}, which this test does not know`)
          return v
        }),
      ]),
    )
    execFileSync('bash', ['-e', '-c', String(step['run'])], { env: { PATH: process.env['PATH'] ?? '', ...env } })
    return String(env['RESULT'])
  }

  it.each(waveJobs)('%s: runs after the trigger step and before the upload, writing where the upload reads', (id) => {
    const all = steps(record(jobs[id]))
    const at = (test: (s: Json) => boolean) => all.findIndex(test)
    const fallback = at((s) => String(s['if']).includes('failure()'))
    const upload = at((s) => String(s['uses']).startsWith('actions/upload-artifact@'))
    expect(fallback).toBeGreaterThan(at(ours))
    expect(upload).toBeGreaterThan(fallback)
    expect(record(all[fallback]?.['env'])['RESULT']).toBe(record(all[upload]?.['with'])['path'])
    expect(record(all[at(ours)]?.['with'])['result-file']).toBe(record(all[upload]?.['with'])['path'])
  })

  it.each(waveJobs)('%s: a missing kubeconfig secret is a Failed result naming the secret, which the summary shows', (id) => {
    const file = runFallback(record(jobs[id]), { kubeconfig: 'failure', trigger: 'skipped' })
    const result = readResultFile(readFileSync(file, 'utf8'), file)
    expect(result).toMatchObject({ cluster: 'prod-eu', wave: 3, state: 'Failed', results: [] })
    expect(result.message).toContain('Secret KUBECONFIG_PROD_EU is empty or not passed')
    const gathered = gatherResults(PLAN, [result])
    expect(gathered.find((c) => c.cluster === 'prod-eu')).toMatchObject({ state: 'Failed', message: result.message })
    rmSync(file)
  })

  it.each(waveJobs)("%s: the plan's download failing says so; a result the trigger step wrote is kept", (id) => {
    const job = record(jobs[id])
    const file = runFallback(job, { plan: 'failure', kubeconfig: 'skipped', trigger: 'skipped' })
    expect(readResultFile(readFileSync(file, 'utf8'), file).message).toContain('plan artifact')
    const own = readFileSync(file, 'utf8').replace('"Failed"', '"Succeeded"')
    writeFileSync(file, own)
    runFallback(job, { trigger: 'failure' })
    expect(readFileSync(file, 'utf8')).toBe(own)
    rmSync(file)
    expect(existsSync(file)).toBe(false)
  })
  it('examples/fleet-matrix.yml: its cluster job leaves a Failed result the same way', () => {
    const job = record(record(yaml('examples/fleet-matrix.yml')['jobs'])['trigger'])
    const file = runFallback(job, {})
    expect(readResultFile(readFileSync(file, 'utf8'), file)).toMatchObject({ cluster: 'prod-eu', wave: 3, state: 'Failed' })
    const upload = steps(job).find((s) => String(s['uses']).startsWith('actions/upload-artifact@'))
    expect(file).toBe(String(record(upload?.['with'])['path']).replace('${{ runner.temp }}', temp).replace('${{ matrix.cluster }}', 'prod-eu'))
    rmSync(file)
  })
})
