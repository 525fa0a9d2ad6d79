// Runs the bundled action (dist/index.js) exactly as the Actions runner does: inputs as
// INPUT_* variables, the event payload in a file, outputs and the job summary in files.

import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from './cluster.ts'

/** The bundle under test: dist/, or HELMRELEASE_TRIGGER_DIST for one built elsewhere (node scripts/bundle.mjs <dir>). */
export const DIST_DIR = process.env['HELMRELEASE_TRIGGER_DIST'] ?? join(REPO_ROOT, 'dist')

export interface ActionRun {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
  readonly outputs: Readonly<Record<string, string>>
  readonly summary: string
}

export interface ActionOptions {
  /** The checked-out repository (GITHUB_WORKSPACE). */
  readonly workspace: string
  readonly eventName: string
  readonly event: unknown
  /** GITHUB_SHA */
  readonly sha: string
  /** Input name (as in action.yml) → value. */
  readonly inputs: Readonly<Record<string, string>>
  readonly env?: Readonly<Record<string, string>>
}

export async function runAction(options: ActionOptions): Promise<ActionRun> {
  const dir = mkdtempSync(join(tmpdir(), 'hrt-runner-'))
  try {
    const files = { event: join(dir, 'event.json'), output: join(dir, 'output'), summary: join(dir, 'summary.md') }
    writeFileSync(files.event, JSON.stringify(options.event))
    writeFileSync(files.output, '')
    writeFileSync(files.summary, '')
    const inputs = Object.fromEntries(Object.entries(options.inputs).map(([k, v]) => [`INPUT_${k.replace(/ /g, '_').toUpperCase()}`, v]))
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      HOME: dir, // no ~/.kube/config unless a test provides one
      GITHUB_ACTIONS: 'true',
      GITHUB_EVENT_NAME: options.eventName,
      GITHUB_EVENT_PATH: files.event,
      GITHUB_WORKSPACE: options.workspace,
      GITHUB_SHA: options.sha,
      GITHUB_OUTPUT: files.output,
      GITHUB_STEP_SUMMARY: files.summary,
      GITHUB_SERVER_URL: 'https://github.example',
      GITHUB_REPOSITORY: 'acme/fleet',
      GITHUB_RUN_ID: '4242',
      RUNNER_TEMP: dir,
      ...inputs,
      ...options.env,
    }
    const entry = join(DIST_DIR, 'index.js')
    const { exitCode, stdout, stderr } = await runProcess(process.execPath, [entry], options.workspace, env)
    return { exitCode, stdout, stderr, outputs: parseOutputs(readFileSync(files.output, 'utf8')), summary: readFileSync(files.summary, 'utf8') }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Runs a process to its end with exactly `env`, collecting what it prints. */
export function runProcess(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ exitCode: code ?? -1, stdout, stderr }))
  })
}

/** GITHUB_OUTPUT as @actions/core writes it: `name<<DELIMITER\nvalue\nDELIMITER`. */
export function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {}
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const m = /^([^<=]+)<<(.+)$/.exec(lines[i] ?? '')
    if (m === null) continue
    const [, name = '', delimiter] = m
    const value: string[] = []
    for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i] ?? '')
    outputs[name] = value.join('\n')
  }
  return outputs
}
