// Every workflow we ship (examples/ and .github/workflows/) is a well-formed GitHub workflow,
// gives our action only inputs action.yml declares (read now: it grows), calls the reusable
// workflow with inputs and secrets it declares, and never inlines a credential.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseDocument } from 'yaml'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')

type Json = Record<string, unknown>

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function readYaml(path: string): Json {
  const doc = parseDocument(readFileSync(path, 'utf8'))
  if (doc.errors.length > 0) throw new Error(`${relative(root, path)} is not valid YAML: ${doc.errors.map((e) => e.message).join('; ')}`)
  const value: unknown = doc.toJS()
  if (!isRecord(value)) throw new Error(`${relative(root, path)} is not a mapping`)
  return value
}

function workflowFiles(dir: string): string[] {
  return readdirSync(join(root, dir))
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => join(dir, f))
}

const FILES = [...workflowFiles('examples'), ...workflowFiles('.github/workflows')]
const REUSABLE = '.github/workflows/trigger.yml'

// ---- what action.yml and the reusable workflow declare, read at test time ------------------

interface Declared {
  readonly inputs: Json
  readonly outputs: Json
}

function action(): Declared {
  const a = readYaml(join(root, 'action.yml'))
  return { inputs: record(a['inputs']), outputs: record(a['outputs']) }
}

function workflowCall(): { inputs: Json; secrets: Json; outputs: Json } {
  const call = record(record(readYaml(join(root, REUSABLE))['on'])['workflow_call'])
  return { inputs: record(call['inputs']), secrets: record(call['secrets']), outputs: record(call['outputs']) }
}

function record(value: unknown): Json {
  return isRecord(value) ? value : {}
}

// ---- how a workflow refers to us -----------------------------------------------------------

/** A step that runs this action: the checkout itself, or owner/helmrelease-trigger@ref. */
function isOurAction(uses: unknown): boolean {
  return typeof uses === 'string' && (uses === './' || /^[\w.-]+\/helmrelease-trigger@[\w./-]+$/.test(uses))
}

/** A job that calls our reusable workflow. */
function isOurWorkflow(uses: unknown): boolean {
  return typeof uses === 'string' && (uses === `./${REUSABLE}` || /^[\w.-]+\/helmrelease-trigger\/\.github\/workflows\/trigger\.yml@[\w./-]+$/.test(uses))
}

// secrets[matrix.secret]: a fleet's matrix job reads its own cluster's secret, named by the plan.
// `|| github.token`: the job's own token when no secret is given, never an inlined one.
const SECRET_EXPRESSION = /^\$\{\{\s*secrets(\.[A-Za-z_][A-Za-z0-9_]*|\[matrix\.[A-Za-z_][\w-]*\])(\s*\|\|\s*github\.token)?\s*\}\}$/
/** Keys whose value is a credential, whatever the action (kubeconfig, password, client-secret, token…). */
const CREDENTIAL_KEY = /(^|[-_])(kubeconfig|password|secret|token|credentials|private[-_]?key|access[-_]key)$/i
/** Credentials pasted into a file. */
const INLINE_CREDENTIALS = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /client-key-data:/,
  /client-certificate-data:/,
  /\btoken:\s*["']?[A-Za-z0-9._-]{20,}/,
  /\bAKIA[0-9A-Z]{16}\b/,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/,
]
/** Steps that leave a kubeconfig in $KUBECONFIG or ~/.kube/config for the next step. */
const KUBECONFIG_PRODUCERS = /(get-gke-credentials|aks-set-context|k8s-set-context)@/

const EVENTS = new Set([
  'push',
  'pull_request',
  'pull_request_target',
  'workflow_dispatch',
  'workflow_call',
  'schedule',
  'release',
  'merge_group',
  'workflow_run',
])

function jobsOf(workflow: Json): [string, Json][] {
  return Object.entries(record(workflow['jobs'])).map(([id, job]) => [id, record(job)])
}

function stepsOf(job: Json): Json[] {
  return Array.isArray(job['steps']) ? job['steps'].map(record) : []
}

function eventsOf(workflow: Json): string[] {
  const on = workflow['on']
  if (typeof on === 'string') return [on]
  if (Array.isArray(on)) return on.map(String)
  return Object.keys(record(on))
}

/** The bodies of every ${{ … }} in a value (any depth). */
function expressions(value: unknown): string[] {
  const text = JSON.stringify(value) ?? ''
  return [...text.matchAll(/\$\{\{(.*?)\}\}/g)].map((m) => m[1] ?? '')
}

// ---- the checks ----------------------------------------------------------------------------

describe.each(FILES)('%s', (file) => {
  const path = join(root, file)

  it('is a well-formed workflow: events, jobs, steps with uses or run', () => {
    const workflow = readYaml(path)
    const events = eventsOf(workflow)
    expect(events.length, 'on: names no event').toBeGreaterThan(0)
    for (const e of events) expect(EVENTS, `unknown event '${e}'`).toContain(e)
    const jobs = jobsOf(workflow)
    expect(jobs.length, 'jobs: is empty').toBeGreaterThan(0)
    const ids = new Set(jobs.map(([id]) => id))
    for (const [id, job] of jobs) {
      for (const need of [job['needs'] ?? []].flat()) expect(ids, `job ${id} needs unknown job '${String(need)}'`).toContain(need)
      if (job['uses'] !== undefined) {
        expect(typeof job['uses'], `job ${id}: uses`).toBe('string')
        expect(job['steps'], `job ${id} calls a workflow and has steps`).toBeUndefined()
        continue
      }
      expect(job['runs-on'], `job ${id} has no runs-on`).toBeDefined()
      const steps = stepsOf(job)
      expect(steps.length, `job ${id} has no steps`).toBeGreaterThan(0)
      const stepIds = steps.flatMap((s) => (typeof s['id'] === 'string' ? [s['id']] : []))
      expect(new Set(stepIds).size, `job ${id} repeats a step id`).toBe(stepIds.length)
      steps.forEach((step, i) => {
        const where = `job ${id}, step ${i + 1}`
        const kinds = ['uses', 'run'].filter((k) => typeof step[k] === 'string' && step[k] !== '')
        expect(kinds, `${where} needs exactly one of uses or run`).toHaveLength(1)
        if (typeof step['uses'] === 'string' && !step['uses'].startsWith('./')) expect(step['uses'], `${where}: pin the action to a ref`).toMatch(/@[\w./-]+$/)
        if (step['with'] !== undefined) {
          expect(isRecord(step['with']), `${where}: with must be a mapping`).toBe(true)
          for (const [k, v] of Object.entries(record(step['with'])))
            expect(['string', 'number', 'boolean'], `${where}: with.${k} must be a scalar`).toContain(typeof v)
        }
      })
    }
  })

  it('refers only to inputs, steps and outputs that exist', () => {
    const workflow = readYaml(path)
    const on = record(workflow['on'])
    const inputs = new Set([...Object.keys(record(record(on['workflow_dispatch'])['inputs'])), ...Object.keys(record(record(on['workflow_call'])['inputs']))])
    for (const e of expressions(workflow)) {
      for (const m of e.matchAll(/\binputs\.([\w-]+)/g)) expect(inputs, `\${{${e}}} names an undeclared input`).toContain(m[1])
    }
    const ours = action()
    const called = workflowCall()
    const jobs = new Map(jobsOf(workflow))
    for (const [id, job] of jobs) {
      const steps = new Map(stepsOf(job).flatMap((s) => (typeof s['id'] === 'string' ? [[s['id'], s] as const] : [])))
      for (const e of expressions(job)) {
        for (const m of e.matchAll(/\bsteps\.([\w-]+)\.outputs\.([\w-]+)/g)) {
          const step = steps.get(m[1] ?? '')
          expect(step, `job ${id}: \${{${e}}} names no step of this job`).toBeDefined()
          if (isOurAction(step?.['uses'])) expect(Object.keys(ours.outputs), `job ${id}: our action has no output '${m[2]}'`).toContain(m[2])
        }
        for (const m of e.matchAll(/\bneeds\.([\w-]+)\.outputs\.([\w-]+)/g)) {
          const needed = jobs.get(m[1] ?? '')
          expect(needed, `job ${id}: \${{${e}}} names no job`).toBeDefined()
          if (isOurWorkflow(needed?.['uses'])) expect(Object.keys(called.outputs), `the reusable workflow has no output '${m[2]}'`).toContain(m[2])
        }
      }
    }
  })

  it('gives our action only inputs declared in action.yml, and every required one', () => {
    const declared = action().inputs
    const required = Object.entries(declared).flatMap(([name, spec]) =>
      record(spec)['required'] === true && record(spec)['default'] === undefined ? [name] : [],
    )
    for (const [id, job] of jobsOf(readYaml(path))) {
      for (const step of stepsOf(job).filter((s) => isOurAction(s['uses']))) {
        const given = Object.keys(record(step['with']))
        for (const key of given) expect(Object.keys(declared), `job ${id}: '${key}' is not an input of action.yml`).toContain(key)
        for (const key of required) expect(given, `job ${id}: required input '${key}' missing`).toContain(key)
      }
    }
  })

  it('calls the reusable workflow with the inputs and secrets it declares', () => {
    const called = workflowCall()
    for (const [id, job] of jobsOf(readYaml(path)).filter(([, j]) => isOurWorkflow(j['uses']))) {
      for (const key of Object.keys(record(job['with'])))
        expect(Object.keys(called.inputs), `job ${id}: '${key}' is not an input of ${REUSABLE}`).toContain(key)
      const secrets = job['secrets']
      if (secrets === 'inherit') continue
      for (const key of Object.keys(record(secrets))) expect(Object.keys(called.secrets), `job ${id}: '${key}' is not a secret of ${REUSABLE}`).toContain(key)
      for (const [name, spec] of Object.entries(called.secrets)) {
        if (record(spec)['required'] === true) expect(Object.keys(record(secrets)), `job ${id}: required secret '${name}' missing`).toContain(name)
      }
    }
  })

  it('passes credentials as secrets, never inline', () => {
    const text = readFileSync(path, 'utf8')
    for (const pattern of INLINE_CREDENTIALS) expect(text, `looks like an inlined credential (${pattern})`).not.toMatch(pattern)
    for (const [id, job] of jobsOf(readYaml(path))) {
      const withs = [record(job['with']), ...stepsOf(job).map((s) => record(s['with']))]
      for (const w of withs) {
        // A flag such as persist-credentials: false is not a credential.
        for (const [key, value] of Object.entries(w).filter(([k, v]) => CREDENTIAL_KEY.test(k) && !['true', 'false'].includes(String(v)))) {
          expect(String(value), `job ${id}: ${key} must be \${{ secrets.NAME }}`).toMatch(SECRET_EXPRESSION)
        }
      }
      if (isRecord(job['secrets'])) {
        for (const [key, value] of Object.entries(job['secrets']))
          expect(String(value), `job ${id}: secret ${key} must be \${{ secrets.NAME }}`).toMatch(SECRET_EXPRESSION)
      }
    }
  })

  it('gives our action a cluster, unless the workflow only plans pull requests or lints from git', () => {
    const workflow = readYaml(path)
    const planOnly = eventsOf(workflow).every((e) => e === 'pull_request' || e === 'pull_request_target')
    if (planOnly) return
    for (const [id, job] of jobsOf(workflow)) {
      const steps = stepsOf(job)
      steps.forEach((step, i) => {
        const inputs = record(step['with'])
        if (!isOurAction(step['uses']) || inputs['kubeconfig'] !== undefined) return
        // discover with from-git reads the repository alone; so do plan and fleet-summary.
        if (inputs['mode'] === 'discover' && String(inputs['from-git']) === 'true') return
        if (inputs['mode'] === 'plan' || inputs['mode'] === 'fleet-summary') return
        const before = steps.slice(0, i)
        const produced = before.some((s) => KUBECONFIG_PRODUCERS.test(String(s['uses'] ?? '')) || /KUBECONFIG=.*GITHUB_ENV/s.test(String(s['run'] ?? '')))
        const runnerOwn = typeof job['runs-on'] !== 'string' || job['runs-on'].includes('${{') || job['runs-on'].includes('self-hosted')
        expect(produced || runnerOwn, `job ${id}: no kubeconfig input and no earlier step that writes KUBECONFIG`).toBe(true)
      })
    }
  })
})

describe(`the reusable workflow ${REUSABLE}`, () => {
  const workflow = () => readYaml(join(root, REUSABLE))
  const normal = (value: unknown): string => (value === undefined ? '' : String(value).trim())

  it('is a workflow_call with one job that runs our action', () => {
    expect(eventsOf(workflow())).toEqual(['workflow_call'])
    const steps = jobsOf(workflow()).flatMap(([, job]) => stepsOf(job))
    expect(steps.filter((s) => isOurAction(s['uses']))).toHaveLength(1)
  })

  it('exposes every input of action.yml with the same default, and hands it to the action', () => {
    const { inputs: declared } = action()
    const called = workflowCall()
    const step = jobsOf(workflow())
      .flatMap(([, job]) => stepsOf(job))
      .find((s) => isOurAction(s['uses']))
    const given = record(step?.['with'])
    for (const [name, spec] of Object.entries(declared)) {
      if (name === 'kubeconfig') {
        expect(Object.keys(called.secrets)).toContain('kubeconfig')
        expect(given['kubeconfig']).toMatch(/^\$\{\{\s*secrets\.kubeconfig\s*\}\}$/)
        continue
      }
      // A token is a secret too; without one the job's own GITHUB_TOKEN, as the action's default.
      if (name === 'github-token') {
        expect(Object.keys(called.secrets)).toContain('github_token')
        expect(given['github-token']).toMatch(/^\$\{\{\s*secrets\.github_token \|\| github\.token\s*\}\}$/)
        continue
      }
      expect(Object.keys(called.inputs), `action input '${name}' is not an input of ${REUSABLE}: add it there`).toContain(name)
      expect(normal(record(called.inputs[name])['default']), `default of '${name}' differs from action.yml`).toBe(normal(record(spec)['default']))
      expect(given[name], `'${name}' is not passed to the action`).toMatch(new RegExp(`^\\$\\{\\{\\s*inputs\\.${name}\\s*\\}\\}$`))
    }
  })

  it("maps every output of action.yml to the step's output", () => {
    const { outputs: declared } = action()
    const called = workflowCall()
    const jobs = jobsOf(workflow())
    for (const name of Object.keys(declared)) {
      const value = normal(record(called.outputs[name])['value'])
      const match = /^\$\{\{\s*jobs\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}$/.exec(value)
      expect(match, `output '${name}' is not mapped from a job output`).not.toBeNull()
      const job = jobs.find(([id]) => id === match?.[1])?.[1]
      const step = stepsOf(job ?? {}).find((s) => isOurAction(s['uses']))
      expect(normal(record(job?.['outputs'])[match?.[2] ?? ''])).toBe(`\${{ steps.${String(step?.['id'])}.outputs.${name} }}`)
    }
  })
})
