// S5 of the second security audit: the steps of our examples and reusable workflows that print
// the action's outputs, run by bash as the runner runs a `run:` step (`bash --noprofile --norc
// -eo pipefail`), with outputs that carry a hostile name and message as the action sets them
// (through its own output path). What they print is read as the runner reads a step's output:
// no line may be a workflow command.

import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseDocument } from 'yaml'
import { describe, expect, it } from 'vitest'
import { outputText } from '../../src/entry/publish.ts'
import { workflowCommands } from '../../test/support/workflow-commands.ts'

const root = join(import.meta.dirname, '..', '..')

/** What a fork's pull request or the cluster can put in a name or a message. */
const HOSTILE = 'web\n::warning title=Injected::x\r::add-mask::helmrelease\r\n::error file=README.md,line=1::forged ##[error]legacy \u2028::notice::ls'

/** Each output as the action sets it, every string of it hostile. */
const OUTPUTS: Readonly<Record<string, unknown>> = {
  plan: { releases: [{ namespace: 'apps', name: HOSTILE, sources: [{ id: `ConfigMap/apps/${HOSTILE}` }] }], sources: [], problems: [{ message: HOSTILE }] },
  triggered: [{ namespace: 'apps', name: HOSTILE, reason: HOSTILE, message: HOSTILE }],
  skipped: [{ namespace: 'apps', name: HOSTILE, reason: HOSTILE, message: HOSTILE }],
  failed: [{ namespace: 'apps', name: HOSTILE, reason: HOSTILE, message: HOSTILE }],
  findings: [{ severity: 'error', message: HOSTILE, file: HOSTILE, line: 1 }],
  drift: { releases: [{ namespace: 'apps', name: HOSTILE, state: 'Drifted', drifted: [{ kind: HOSTILE, name: HOSTILE, state: HOSTILE }] }] },
  fleet: { clusters: [{ name: HOSTILE, message: HOSTILE }] },
  // A number the action computes; the step that reads it writes its own ::error::.
  'wave-count': 4,
}

interface PrintingStep {
  readonly where: string
  readonly run: string
  readonly env: Record<string, string>
}

const OUTPUT_REFERENCE = /^\$\{\{\s*(?:steps|needs)\.[\w-]+\.outputs\.([\w-]+)\s*\}\}$/

/** Every `run:` step whose environment carries one of the action's outputs. */
function printingSteps(): PrintingStep[] {
  const files = ['examples', '.github/workflows'].flatMap((dir) =>
    readdirSync(join(root, dir))
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => join(dir, f)),
  )
  const out: PrintingStep[] = []
  for (const file of files) {
    const workflow = parseDocument(readFileSync(join(root, file), 'utf8')).toJS() as {
      jobs?: Record<string, { steps?: { name?: string; run?: string; env?: Record<string, string> }[] }>
    }
    for (const [job, spec] of Object.entries(workflow.jobs ?? {})) {
      for (const [index, step] of (spec.steps ?? []).entries()) {
        if (typeof step.run !== 'string') continue
        const env = Object.fromEntries(
          Object.entries(step.env ?? {}).flatMap(([name, value]) => {
            const output = OUTPUT_REFERENCE.exec(String(value))?.[1]
            return output === undefined ? [] : [[name, outputText(JSON.stringify(OUTPUTS[output] ?? { value: HOSTILE }))]]
          }),
        )
        if (Object.keys(env).length > 0) out.push({ where: `${file} ${job} step ${index + 1}${step.name ? ` (${step.name})` : ''}`, run: step.run, env })
      }
    }
  }
  return out
}

const steps = printingSteps()

describe('example steps printing the action’s outputs', () => {
  it('are found: the plan, the failures, the findings, the drift and the reusable workflow’s outputs', () => {
    expect(steps.map((s) => s.where.split(' ')[0])).toEqual(
      expect.arrayContaining([
        'examples/pull-request-plan.yml',
        'examples/manual-dispatch.yml',
        'examples/discover.yml',
        'examples/scheduled-drift.yml',
        'examples/reusable-call.yml',
      ]),
    )
  })

  it.each(steps.map((s) => [s.where, s] as const))('%s prints no workflow command from hostile outputs', (_where, step) => {
    const ran = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', step.run], {
      env: { PATH: process.env['PATH'] ?? '', ...step.env },
      encoding: 'utf8',
    })
    const printed = `${ran.stdout}${ran.stderr}`
    // Only a command the step writes itself (fleet.yml's ::error:: on too many waves).
    const commands = workflowCommands(printed)
    expect(commands.filter((c) => !step.run.includes(`echo "::${c.name}::`))).toEqual([])
    expect(commands.filter((c) => /Injected|forged|add-mask|legacy/.test(c.line))).toEqual([])
    if (ran.status === 0) expect(printed).toContain('web') // it printed the hostile text, defused
  })
})
