// The action's one publish path, through the real @actions/core: workflow commands on stdout,
// outputs and the job summary in the runner's files. Every mode's result takes this path, so
// the caps and the sanitiser hold for all of them.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { publish } from '../../../src/entry/publish.ts'
import type { Annotation, ModeResult } from '../../../src/modes/mode.ts'

const result = (overrides: Partial<ModeResult>): ModeResult => ({
  headline: 'helmrelease-trigger: 0 triggered, 0 skipped, 0 failed',
  log: [],
  outputs: {},
  annotations: [],
  summaryMarkdown: '## helmrelease-trigger\n',
  text: '',
  json: undefined,
  failure: undefined,
  ...overrides,
})

describe('publish', () => {
  // One directory for the whole file: the toolkit's summary remembers its file once written.
  const dir = mkdtempSync(join(tmpdir(), 'hrt-publish-'))
  const files = { GITHUB_OUTPUT: join(dir, 'output'), GITHUB_STEP_SUMMARY: join(dir, 'summary.md') }
  let stdout: string[]
  const saved = { ...process.env }
  const exitCode = process.exitCode

  beforeEach(() => {
    for (const file of Object.values(files)) writeFileSync(file, '')
    Object.assign(process.env, files)
    stdout = []
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stdout.push(String(chunk))
      return true
    })
  })

  afterEach(() => {
    vi.restoreAllMocks()
    process.env = { ...saved }
    process.exitCode = exitCode
  })

  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const env = () => process.env
  const commands = (name: string) => stdout.filter((l) => l.startsWith(`::${name} `) || l.startsWith(`::${name}::`))

  it('annotates at most 50 problems and says how many more there are', async () => {
    const annotations: Annotation[] = Array.from({ length: 60 }, (_, i) => ({
      severity: 'warning',
      title: 'helmrelease-trigger drift',
      message: `apps/r${i}: drifted`,
    }))
    await publish(result({ annotations }), env())
    expect(commands('warning')).toHaveLength(50)
    expect(commands('notice')).toEqual([expect.stringContaining('…and 10 more problems: see the job summary and the outputs.')])
  })

  it('puts an annotation on its file and line', async () => {
    await publish(result({ annotations: [{ severity: 'error', title: 'helmrelease-trigger', message: 'bad YAML', file: 'apps/a.yaml', line: 3 }] }), env())
    expect(commands('error')).toEqual([expect.stringMatching(/^::error title=helmrelease-trigger,file=apps\/a.yaml,line=3::bad YAML/)])
  })

  it('starts no workflow command from untrusted text in annotations, log lines or the failure', async () => {
    const hostile = 'x\n::add-mask::leak\r\n::stop-commands::t'
    await publish(result({ annotations: [{ severity: 'warning', title: 't', message: hostile }], log: [hostile], failure: hostile }), env())
    expect(
      stdout
        .join('')
        .split('\n')
        .filter((l) => /^::(add-mask|stop-commands)/.test(l)),
    ).toEqual([])
  })

  it('writes the outputs, the summary, the log lines and the failure', async () => {
    await publish(
      result({
        outputs: { findings: '[]', 'wave-count': '2' },
        log: ['  apps/web: Triggered'],
        summaryMarkdown: '## done\n',
        failure: '1 problem (fail-on: error)',
      }),
      env(),
    )
    const outputs = readFileSync(files.GITHUB_OUTPUT, 'utf8')
    expect(outputs).toMatch(/^findings<<(.+)\n\[\]\n\1\n/m)
    expect(outputs).toMatch(/^wave-count<<(.+)\n2\n\1\n/m)
    expect(readFileSync(files.GITHUB_STEP_SUMMARY, 'utf8')).toBe('## done\n')
    expect(stdout).toContain('helmrelease-trigger: 0 triggered, 0 skipped, 0 failed\n')
    expect(stdout).toContain('  apps/web: Triggered\n')
    expect(commands('error')).toEqual([expect.stringContaining('1 problem (fail-on: error)')])
    expect(process.exitCode).toBe(1)
  })

  it('cuts a summary over 1 MiB at a line, saying how many lines were left out', async () => {
    const line = `| ${'x'.repeat(1000)} |`
    await publish(result({ summaryMarkdown: Array.from({ length: 1100 }, () => line).join('\n') }), env())
    const summary = readFileSync(files.GITHUB_STEP_SUMMARY, 'utf8')
    expect(Buffer.byteLength(summary)).toBeLessThan(1024 * 1024)
    expect(summary).toMatch(/…and \d+ more lines \(the summary is capped at 1 MiB; the outputs have the rest\)\.\n$/)
  })
})
