// The CLI: flag parsing, usage, errors and exit codes, and `plan` against a real repository
// with real commits made in the system temp directory (no cluster needed).

import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main, parseArgs, type CliIo } from '../../src/entry/cli.ts'
import { ConfigurationError } from '../../src/lib/errors.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'

// Real git processes: generous limits for a busy machine.
vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 })

// Keep the machine's git configuration out of the repositories we build.
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' }

const scratch: string[] = []
afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })))
})

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `hrt-cli-${prefix}-`))
  scratch.push(dir)
  return dir
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' }).trim()
}

async function commit(dir: string, files: Readonly<Record<string, string>>, message: string): Promise<string> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), text)
  }
  git(dir, 'add', '-A')
  git(dir, 'commit', '-q', '-m', message)
  return git(dir, 'rev-parse', 'HEAD')
}

const configMap = (replicas: number): string => triggerConfigMap({ name: 'app-values', namespace: 'apps', releases: 'app', values: `replicas: ${replicas}` })

/** An io that records what is printed; env and cwd never come from the real process. */
function recordingIo(cwd = '/nonexistent-cwd'): CliIo & { readonly stdout: () => string; readonly stderr: () => string } {
  const out: string[] = []
  const err: string[] = []
  return {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: {},
    cwd,
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  }
}

const entries = (m: ReadonlyMap<string, string>): Record<string, string> => Object.fromEntries(m)

describe('parseArgs', () => {
  it.each([
    ['--flag value', ['plan', '--base', 'abc123'], { base: 'abc123' }, {}],
    ['--flag=value', ['plan', '--base=abc123'], { base: 'abc123' }, {}],
    ['--flag=value keeps later equals signs', ['plan', '--paths=a=b/*.yaml'], { paths: 'a=b/*.yaml' }, {}],
    ['--flag= gives an empty value', ['plan', '--context='], { context: '' }, {}],
    ['a bare boolean is true', ['trigger', '--force', '--dry-run'], { force: 'true', 'dry-run': 'true' }, {}],
    [
      '--no-<boolean> is false',
      ['trigger', '--no-discover', '--no-wait', '--no-wait-for-apply', '--no-semantic-digest'],
      { discover: 'false', wait: 'false', 'wait-for-apply': 'false', 'semantic-digest': 'false' },
      {},
    ],
    ['a boolean with an inline value', ['trigger', '--force=false', '--reset=True'], { force: 'false', reset: 'True' }, {}],
    [
      'every value input',
      [
        'trigger',
        '--kubeconfig-encoding',
        'plain',
        '--context',
        'dev',
        '--head',
        'HEAD',
        '--annotation-prefix',
        'example.com',
        '--default-namespace',
        'apps',
        '--timeout',
        '90s',
        '--max-concurrency',
        '4',
        '--fail-on',
        'warning',
      ],
      {
        'kubeconfig-encoding': 'plain',
        context: 'dev',
        head: 'HEAD',
        'annotation-prefix': 'example.com',
        'default-namespace': 'apps',
        timeout: '90s',
        'max-concurrency': '4',
        'fail-on': 'warning',
      },
      {},
    ],
    [
      'CLI-only flags',
      ['plan', '--repo', '/tmp/r', '--kubeconfig=/tmp/k', '--json', '--help'],
      {},
      { repo: '/tmp/r', kubeconfig: '/tmp/k', json: 'true', help: 'true' },
    ],
    ['the last of a repeated flag wins', ['plan', '--base', 'a', '--base=b'], { base: 'b' }, {}],
  ] as const)('%s', (_, argv, inputs, flags) => {
    const parsed = parseArgs(argv)
    expect(parsed.command).toBe(argv[0])
    expect(entries(parsed.inputs)).toEqual(inputs)
    expect(entries(parsed.flags)).toEqual(flags)
  })

  it('reads no command from an empty argv', () => {
    const parsed = parseArgs([])
    expect([parsed.command, parsed.inputs.size, parsed.flags.size]).toEqual(['', 0, 0])
  })

  it.each([
    ['an unknown flag', ['plan', '--bogus'], "Unknown flag --bogus. Run 'helmrelease-trigger --help'."],
    ['an unknown flag with a value', ['plan', '--namespace=apps'], "Unknown flag --namespace. Run 'helmrelease-trigger --help'."],
    ['--no- on a value input', ['plan', '--no-base'], "Unknown flag --no-base. Run 'helmrelease-trigger --help'."],
    ['--no- on a CLI flag', ['plan', '--no-json'], "Unknown flag --no-json. Run 'helmrelease-trigger --help'."],
    ['the mode input (not a flag: the command is the mode)', ['plan', '--mode', 'watch'], "Unknown flag --mode. Run 'helmrelease-trigger --help'."],
    ['a missing value at the end', ['plan', '--base'], 'Flag --base needs a value.'],
    ['a missing value for a CLI flag', ['plan', '--repo'], 'Flag --repo needs a value.'],
    ['a stray argument', ['plan', 'HEAD~1'], "Unexpected argument 'HEAD~1'. Run 'helmrelease-trigger --help'."],
    ['a single-dash flag', ['plan', '-f'], "Unexpected argument '-f'. Run 'helmrelease-trigger --help'."],
  ] as const)('refuses %s with a ConfigurationError', (_, argv, message) => {
    let thrown: unknown
    try {
      parseArgs(argv)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(ConfigurationError)
    expect(thrown instanceof Error ? thrown.message : undefined).toBe(message)
  })
})

describe('main', () => {
  it.each([[['--help']], [['help']], [[]], [['plan', '--help']], [['trigger', '--help']]])('%j prints the usage and returns 0', async (argv) => {
    const io = recordingIo()
    expect(await main(argv, io)).toBe(0)
    expect(io.stdout()).toMatch(/^Usage: helmrelease-trigger <plan\|trigger\|fleet\|fleet-summary\|discover\|recover\|drift\|watch> \[flags\]\n/)
    expect(io.stdout()).toContain('--no-discover')
    expect(io.stderr()).toBe('')
  })

  it.each([
    [['bogus'], "error: Unknown command 'bogus'; expected plan, trigger, discover, recover, drift, watch, fleet, fleet-summary.\n"],
    [['plan', '--bogus'], "error: Unknown flag --bogus. Run 'helmrelease-trigger --help'.\n"],
    [['plan', '--timeout', 'forever'], "error: Input 'timeout' must be a duration like 5m, 90s or 1h30m; got 'forever'.\n"],
    [['plan', '--fail-on', 'sometimes'], "error: Input 'fail-on' must be one of error, warning, never; got 'sometimes'.\n"],
    [['trigger', '--kubeconfig', '/nonexistent/kubeconfig'], 'error: Cannot read the kubeconfig file /nonexistent/kubeconfig: '],
  ])('%j returns 2 with a message', async (argv, message) => {
    const io = recordingIo()
    expect(await main(argv, io)).toBe(2)
    expect(io.stderr().startsWith(message)).toBe(true)
    expect(io.stdout()).toBe('')
  })

  it('returns 2 outside a repository, naming the directory', async () => {
    const dir = await tempDir('plain')
    const io = recordingIo()
    expect(await main(['plan', '--repo', dir], io)).toBe(2)
    expect(io.stderr()).toContain(`error: ${dir} is not a git repository`)
  })

  describe('plan on a real repository', () => {
    let repo = ''
    let first = ''
    let second = ''

    beforeAll(async () => {
      repo = await tempDir('repo')
      git(repo, 'init', '-q', '-b', 'main')
      git(repo, 'config', 'user.name', 'Test')
      git(repo, 'config', 'user.email', 'test@example.com')
      git(repo, 'config', 'commit.gpgsign', 'false')
      first = await commit(repo, { 'apps/app/values.yaml': configMap(1), 'README.md': '# fleet\n' }, 'first')
      second = await commit(repo, { 'apps/app/values.yaml': configMap(2) }, 'scale app')
    })

    it('prints the changed source and its target, and returns 0', async () => {
      const io = recordingIo()
      expect(await main(['plan', '--repo', repo], io)).toBe(0)
      const lines = io.stdout().split('\n')
      expect(lines[0]).toBe('helmrelease-trigger: plan: 1 release would be triggered')
      expect(lines[1]).toBe(`range: ${first.slice(0, 12)}..${second.slice(0, 12)}`)
      expect(lines).toContain('plan only')
      const source = lines.find((l) => l.startsWith('ConfigMap/apps/app-values'))
      expect(source?.split(/\s{2,}/)).toEqual([
        'ConfigMap/apps/app-values',
        'modified',
        expect.stringMatching(/^[0-9a-f]{12}$/),
        'apps/app/values.yaml:1',
        'apps/app',
      ])
      const release = lines.find((l) => l.startsWith('apps/app '))
      expect(release?.split(/\s{2,}/)).toEqual(['apps/app', 'Planned', 'PlanOnly', '—', '0ms', 'plan only'])
      expect(io.stderr()).toBe('')
    })

    it('runs from the current directory when --repo is not given', async () => {
      const io = recordingIo(repo)
      expect(await main(['plan'], io)).toBe(0)
      expect(io.stdout()).toContain('ConfigMap/apps/app-values')
    })

    it('prints the outputs as JSON with --json', async () => {
      const io = recordingIo()
      expect(await main(['plan', '--repo', repo, '--json'], io)).toBe(0)
      const outputs: unknown = JSON.parse(io.stdout())
      expect(outputs).toMatchObject({
        triggered: [],
        skipped: [{ namespace: 'apps', name: 'app', status: 'Planned', sources: ['ConfigMap/apps/app-values'], reason: 'PlanOnly' }],
        failed: [],
        plan: {
          base: first,
          head: second,
          fullSync: false,
          sources: [
            {
              id: 'ConfigMap/apps/app-values',
              change: 'modified',
              file: 'apps/app/values.yaml',
              line: 1,
              targets: [{ namespace: 'apps', name: 'app', reasons: ['annotation'] }],
            },
          ],
          releases: [{ namespace: 'apps', name: 'app' }],
          problems: [],
        },
      })
    })

    it('honours --base/--head and --paths', async () => {
      const same = recordingIo()
      expect(await main(['plan', '--repo', repo, '--base', second, '--head', second], same)).toBe(0)
      expect(same.stdout()).not.toContain('ConfigMap/apps/app-values')

      const outside = recordingIo()
      expect(await main(['plan', '--repo', repo, '--paths', 'clusters/**'], outside)).toBe(0)
      expect(outside.stdout()).not.toContain('ConfigMap/apps/app-values')

      const inside = recordingIo()
      expect(await main(['plan', '--repo', repo, '--paths=apps/**/*.{yaml,yml}', `--base=${first}`], inside)).toBe(0)
      expect(inside.stdout()).toContain('ConfigMap/apps/app-values  modified')
    })

    it('returns 2 for a base commit that is not in the repository', async () => {
      const io = recordingIo()
      expect(await main(['plan', '--repo', repo, '--base', 'f'.repeat(40)], io)).toBe(2)
      expect(io.stderr()).toBe(`error: input 'base': commit '${'f'.repeat(40)}' not found in the clone; fetch it (actions/checkout fetch-depth: 0)\n`)
    })

    it('returns 1 when a changed manifest is broken (fail-on: error) and 0 under fail-on: never', async () => {
      const broken = await tempDir('broken')
      git(broken, 'init', '-q', '-b', 'main')
      git(broken, 'config', 'user.name', 'Test')
      git(broken, 'config', 'user.email', 'test@example.com')
      git(broken, 'config', 'commit.gpgsign', 'false')
      await commit(broken, { 'apps/values.yaml': configMap(1) }, 'first')
      await commit(broken, { 'apps/values.yaml': `${configMap(2)}  port: 5432\n`, 'apps/bad.yaml': 'kind: ConfigMap\nmetadata: [\n' }, 'break')

      const failing = recordingIo()
      expect(await main(['plan', '--repo', broken], failing)).toBe(1)
      expect(failing.stdout()).toMatch(/^error: apps\/bad\.yaml/m)
      expect(failing.stderr()).toMatch(/^error: \d+ problems? \(fail-on: error\): apps\/bad\.yaml/)

      const lenient = recordingIo()
      expect(await main(['plan', '--repo', broken, '--fail-on', 'never'], lenient)).toBe(0)
      expect(lenient.stderr()).toBe('')
    })
  })
})
