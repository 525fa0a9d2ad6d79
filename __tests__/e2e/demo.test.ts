// The quick start's demo, run as a newcomer runs it (after its setup): it must end on the report
// as the CLI prints it (aligned text, no Markdown or HTML entities), say where the same report
// appears on GitHub, and leave the screenshot it names.

import { spawn } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { FLUX_ENV, REPO_ROOT } from '../../test/support/cluster.ts'

function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--experimental-strip-types', '--no-warnings', 'scripts/demo.ts'], { cwd: REPO_ROOT, env: process.env })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

// The demo always runs the default Flux: the passes of the end-to-end tests on another Flux skip it.
describe.skipIf(process.env[FLUX_ENV] !== undefined)('the demo', () => {
  it('ends on the report as the CLI prints it, then where GitHub shows it and the screenshot', async () => {
    const screenshot = join(REPO_ROOT, 'artifacts', 'demo-report.png')
    rmSync(screenshot, { force: true })
    const { code, stdout, stderr } = await runDemo()
    expect(code, stderr.slice(-4000)).toBe(0)
    const report = stdout.slice(stdout.indexOf('▶ The report'))
    const lines = report.trimEnd().split('\n')
    expect(lines[1]).toBe('helmrelease-trigger: 1 triggered, 0 skipped, 0 failed')
    expect(lines).toContain("note: Read as Flux applies it: 2 Flux Kustomizations from GitRepository 'demo/repo', named by git-repository.")
    expect(lines.find((l) => l.startsWith('ConfigMap/demo/podinfo-values  values.yaml → greeting'))?.split(/\s{2,}/)).toEqual([
      'ConfigMap/demo/podinfo-values',
      'values.yaml → greeting',
      'modified',
      '"hello"',
      '"bonjour"',
    ])
    expect(
      lines
        .find((l) => l.startsWith('demo/podinfo '))
        ?.split(/\s{2,}/)
        .slice(0, 4),
    ).toEqual(['demo/podinfo', 'Upgraded', 'UpgradeSucceeded', '1 → 2'])
    expect(report).not.toMatch(/&#\d+;|<code>|\|\s*---/)
    expect(lines.at(-1)).toBe(
      'On GitHub the same report is the job summary, the check run "helmrelease-trigger" (success) and a comment on pull request #1; as a browser shows them: artifacts/demo-report.png',
    )
    expect(existsSync(screenshot)).toBe(true)
  })
})
