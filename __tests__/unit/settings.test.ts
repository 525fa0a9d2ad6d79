// Settings: the one place inputs are read. Every default, every accepted spelling, every
// refusal (a ConfigurationError naming the input and the value). Also the duration format.

import { homedir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { formatDuration, parseDuration } from '../../src/lib/duration.ts'
import { ConfigurationError } from '../../src/lib/errors.ts'
import {
  DEFAULT_PATHS,
  DEFAULT_RECOVER_PATTERNS,
  discoverOptionsOf,
  FAIL_ON,
  KUBECONFIG_ENCODINGS,
  MODES,
  parseSettings,
  triggerRunOptionsOf,
  type Settings,
} from '../../src/settings.ts'

/** An InputReader over a plain object; unset inputs read as '' like @actions/core's getInput. */
function reader(inputs: Readonly<Record<string, string>>): (name: string) => string {
  return (name) => inputs[name] ?? ''
}

const settingsOf = (inputs: Readonly<Record<string, string>>): Settings => parseSettings(reader(inputs))

function configurationError(inputs: Readonly<Record<string, string>>): ConfigurationError {
  try {
    settingsOf(inputs)
  } catch (error) {
    if (error instanceof ConfigurationError) return error
    throw error
  }
  throw new Error(`expected a ConfigurationError for ${JSON.stringify(inputs)}`)
}

describe('parseSettings defaults', () => {
  it('gives every field its documented default when no input is set', () => {
    const expected: Settings = {
      mode: 'trigger',
      kubeconfig: undefined,
      kubeconfigEncoding: 'auto',
      context: undefined,
      base: undefined,
      head: undefined,
      fullSync: false,
      paths: ['**/*.yaml', '**/*.yml'],
      annotationPrefix: 'nebius.ai',
      defaultNamespace: 'flux-system',
      crossNamespaceTargets: [],
      force: false,
      reset: false,
      discover: true,
      waitForApply: true,
      apply: false,
      wait: true,
      diff: true,
      chartCache: join(homedir(), '.cache', 'helmrelease-trigger', 'charts'),
      kubeVersion: undefined,
      timeoutMs: 300_000,
      maxConcurrency: 10,
      dryRun: false,
      allowPullRequests: false,
      failOn: 'error',
      semanticDigest: true,
      digestKeyNamespace: 'flux-system',
      namespaces: [],
      fromGit: false,
      clusterRoot: undefined,
      gitRepository: undefined,
      deprecations: [],
      recoverPatterns: DEFAULT_RECOVER_PATTERNS.map((p) => new RegExp(p, 'im')),
      recoverMaxAttempts: 3,
      recoverBackoffMs: 300_000,
      driftAction: 'report',
      driftIgnore: [],
      selector: undefined,
      debounceMs: 2_000,
      watchDurationMs: undefined,
      metricsAddress: undefined,
      logFormat: 'text',
      leaderElection: false,
      leaderElectionNamespace: 'flux-system',
      leaderElectionName: 'helmrelease-trigger-watch',
      recoverIntervalMs: undefined,
      githubToken: undefined,
      githubReport: new Set(['check', 'comment']),
      checkName: 'helmrelease-trigger',
      deploymentEnvironment: undefined,
      fluxAttribution: true,
      clusters: undefined,
      cluster: undefined,
      planFile: undefined,
      waves: [],
      maxParallel: 4,
      clusterContexts: new Map(),
      resultFile: undefined,
      resultsDir: undefined,
    }
    expect(settingsOf({})).toEqual(expected)
  })

  it('reads only the inputs it knows, each once by name', () => {
    const asked: string[] = []
    parseSettings((name) => {
      asked.push(name)
      return ''
    })
    expect([...asked].sort()).toEqual(
      [
        'allow-pull-requests',
        'annotation-prefix',
        'apply',
        'base',
        'cluster-root',
        'context',
        'cross-namespace-targets',
        'debounce',
        'default-namespace',
        'digest-key-namespace',
        'discover',
        'drift-action',
        'drift-ignore',
        'dry-run',
        'fail-on',
        'git-repository',
        'force',
        'from-git',
        'full-sync',
        'head',
        'kubeconfig',
        'kubeconfig-encoding',
        'kustomize-path',
        'leader-election',
        'leader-election-name',
        'leader-election-namespace',
        'log-format',
        'max-concurrency',
        'metrics-address',
        'mode',
        'namespaces',
        'paths',
        'recover-backoff',
        'recover-interval',
        'recover-max-attempts',
        'recover-patterns',
        'reset',
        'selector',
        'semantic-digest',
        'timeout',
        'wait',
        'diff',
        'chart-cache',
        'kube-version',
        'wait-for-apply',
        'watch-duration',
        'github-token',
        'github-report',
        'check-name',
        'deployment-environment',
        'flux-attribution',
        'clusters',
        'cluster',
        'plan-file',
        'waves',
        'max-parallel',
        'cluster-contexts',
        'result-file',
        'results',
      ].sort(),
    )
  })

  it('reads the GitHub report inputs, and refuses what GitHub would', () => {
    const s = settingsOf({
      'github-token': ' ghs_x ',
      'github-report': 'comment',
      'check-name': 'deploy / prod',
      'deployment-environment': 'prod',
      'flux-attribution': 'false',
    })
    expect(s).toMatchObject({ githubToken: 'ghs_x', checkName: 'deploy / prod', deploymentEnvironment: 'prod', fluxAttribution: false })
    expect([...s.githubReport]).toEqual(['comment'])
    expect(settingsOf({ 'github-report': 'none' }).githubReport.size).toBe(0)
    expect(settingsOf({ 'github-report': 'false' }).githubReport.size).toBe(0)
    expect([...settingsOf({ 'github-report': 'check\ncomment' }).githubReport]).toEqual(['check', 'comment'])
    expect(configurationError({ 'github-report': 'checks' }).message).toBe("Input 'github-report' must list check and/or comment, or be none; got 'checks'.")
    expect(configurationError({ 'check-name': 'x'.repeat(101) }).message).toContain("Input 'check-name' must be one line of at most 100 characters")
    expect(configurationError({ 'deployment-environment': 'a\nb' }).message).toContain("Input 'deployment-environment' must be one line")
  })

  it('treats whitespace-only inputs as unset', () => {
    const s = settingsOf({ kubeconfig: '  \n', context: ' ', base: '\t', head: ' ', mode: ' ', force: ' ', timeout: '  ', 'max-concurrency': ' ' })
    expect(s.kubeconfig).toBeUndefined()
    expect(s.context).toBeUndefined()
    expect(s.base).toBeUndefined()
    expect(s.head).toBeUndefined()
    expect(s.mode).toBe('trigger')
    expect(s.force).toBe(false)
    expect(s.timeoutMs).toBe(300_000)
    expect(s.maxConcurrency).toBe(10)
  })
})

describe('parseSettings booleans', () => {
  const BOOLEANS = [
    ['full-sync', 'fullSync', false],
    ['force', 'force', false],
    ['reset', 'reset', false],
    ['discover', 'discover', true],
    ['wait-for-apply', 'waitForApply', true],
    ['apply', 'apply', false],
    ['wait', 'wait', true],
    ['dry-run', 'dryRun', false],
    ['allow-pull-requests', 'allowPullRequests', false],
    ['semantic-digest', 'semanticDigest', true],
  ] as const

  const SPELLINGS = [
    ['true', true],
    ['True', true],
    ['TRUE', true],
    [' true ', true],
    ['false', false],
    ['False', false],
    ['FALSE', false],
    ['\tfalse\n', false],
  ] as const

  const cases = BOOLEANS.flatMap(([input, field]) => SPELLINGS.map(([text, value]) => [input, field, text, value] as const))

  it.each(cases)('%s (%s) reads %j as %s', (input, field, text, value) => {
    expect(settingsOf({ [input]: text })[field]).toBe(value)
  })

  it.each(BOOLEANS)('%s (%s) defaults to %s', (_input, field, fallback) => {
    expect(settingsOf({})[field]).toBe(fallback)
  })

  it.each(BOOLEANS.flatMap(([input]) => ['yes', 'no', '1', '0', 'on', 'tRue', 'enabled'].map((bad) => [input, bad] as const)))(
    '%s refuses %j, naming the input and the value',
    (input, bad) => {
      const error = configurationError({ [input]: bad })
      expect(error.message).toBe(`Input '${input}' must be true or false; got '${bad}'.`)
    },
  )
})

describe('parseSettings text inputs', () => {
  it('keeps kubeconfig, context, base and head trimmed', () => {
    const s = settingsOf({ kubeconfig: '\napiVersion: v1\nkind: Config\n', context: ' kind-dev ', base: ' abc123 ', head: 'def456\n' })
    expect(s.kubeconfig).toBe('apiVersion: v1\nkind: Config')
    expect(s.context).toBe('kind-dev')
    expect(s.base).toBe('abc123')
    expect(s.head).toBe('def456')
  })

  it.each([
    ['nebius.ai', 'nebius.ai'],
    ['example.com', 'example.com'],
    ['  team-a.example.com ', 'team-a.example.com'],
    ['single', 'single'],
  ])('annotation-prefix %j → %j', (text, expected) => {
    expect(settingsOf({ 'annotation-prefix': text }).annotationPrefix).toBe(expected)
  })

  it.each(['Nebius.AI', 'nebius.ai/', 'under_score.io', '-lead.io', 'a..b', `${'a'.repeat(254)}`])('annotation-prefix refuses %j', (bad) => {
    const error = configurationError({ 'annotation-prefix': bad })
    expect(error.message).toContain("Input 'annotation-prefix'")
    expect(error.message).toContain(`got '${bad}'`)
  })

  it.each([
    ['apps', 'apps'],
    [' team-1 ', 'team-1'],
    ['a'.repeat(63), 'a'.repeat(63)],
  ])('default-namespace %j → %j', (text, expected) => {
    expect(settingsOf({ 'default-namespace': text }).defaultNamespace).toBe(expected)
  })

  it.each(['Apps', 'apps.example', 'team_1', '-apps', 'apps-', 'a'.repeat(64)])('default-namespace refuses %j', (bad) => {
    const error = configurationError({ 'default-namespace': bad })
    expect(error.message).toContain("Input 'default-namespace'")
    expect(error.message).toContain(`got '${bad}'`)
  })
})

describe('parseSettings paths', () => {
  it.each([
    ['one per line', 'clusters/**/*.yaml\napps/*.yml\n', ['clusters/**/*.yaml', 'apps/*.yml']],
    ['CRLF lines', 'clusters/**/*.yaml\r\napps/*.yml\r\n', ['clusters/**/*.yaml', 'apps/*.yml']],
    ['comma-separated', 'clusters/**/*.yaml, apps/*.yml ,infra/**', ['clusters/**/*.yaml', 'apps/*.yml', 'infra/**']],
    ['lines and commas mixed', 'a/*.yaml, b/*.yaml\nc/*.yaml', ['a/*.yaml', 'b/*.yaml', 'c/*.yaml']],
    [
      'comments and blank lines dropped',
      '# manifests\n\nclusters/**/*.yaml\n  # not these\n\n!clusters/**/secret-*.yaml\n',
      ['clusters/**/*.yaml', '!clusters/**/secret-*.yaml'],
    ],
    ['a comment with a comma stays a comment', '# a, b and c\nclusters/**', ['clusters/**']],
    ['brace alternatives keep their commas', 'clusters/**/*.{yaml,yml}, apps/{a,b}/*.yaml', ['clusters/**/*.{yaml,yml}', 'apps/{a,b}/*.yaml']],
    ['empty items between commas dropped', 'a.yaml,,b.yaml,', ['a.yaml', 'b.yaml']],
  ])('%s', (_, text, expected) => {
    expect(settingsOf({ paths: text }).paths).toEqual(expected)
  })

  it.each([
    ['unset', ''],
    ['only blank lines', '\n  \n'],
    ['only comments', '# nothing here\n# nor here'],
  ])('falls back to the defaults when %s', (_, text) => {
    expect(settingsOf({ paths: text }).paths).toEqual(DEFAULT_PATHS)
    expect(DEFAULT_PATHS).toEqual(['**/*.yaml', '**/*.yml'])
  })
})

describe('parseSettings timeout', () => {
  it.each([
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1h', 3_600_000],
    ['2m30s', 150_000],
    ['1500ms', 1_500],
    ['1.5m', 90_000],
    ['120', 120_000],
    ['1', 1_000],
    [' 10m ', 600_000],
  ])('timeout %j is %i ms', (text, ms) => {
    expect(settingsOf({ timeout: text }).timeoutMs).toBe(ms)
  })

  it.each(['0', '0s', '0m0s', 'five minutes', '5 m', '5M', '-5m', '5d', 'm', '1h30', '1,5m', '5m!'])(
    'timeout refuses %j, naming the input and the value',
    (bad) => {
      const error = configurationError({ timeout: bad })
      expect(error.message).toBe(`Input 'timeout' must be a duration like 5m, 90s or 1h30m; got '${bad.trim()}'.`)
    },
  )
})

describe('parseSettings max-concurrency', () => {
  it.each([
    ['1', 1],
    ['10', 10],
    ['64', 64],
    ['1000', 1000],
    [' 7 ', 7],
  ])('max-concurrency %j → %i', (text, n) => {
    expect(settingsOf({ 'max-concurrency': text }).maxConcurrency).toBe(n)
  })

  it.each(['0', '1001', '-1', '2.5', '1e2', 'ten', '0x10', '+5'])('max-concurrency refuses %j, naming the input, the bounds and the value', (bad) => {
    const error = configurationError({ 'max-concurrency': bad })
    expect(error.message).toBe(`Input 'max-concurrency' must be a whole number from 1 to 1000; got '${bad}'.`)
  })
})

describe('parseSettings enums', () => {
  const ENUMS = [
    ['mode', 'mode', MODES],
    ['fail-on', 'failOn', FAIL_ON],
    ['kubeconfig-encoding', 'kubeconfigEncoding', KUBECONFIG_ENCODINGS],
  ] as const

  it('lists the documented values', () => {
    expect(MODES).toEqual(['trigger', 'watch', 'discover', 'recover', 'drift', 'plan', 'fleet', 'fleet-summary'])
    expect(FAIL_ON).toEqual(['error', 'warning', 'never'])
    expect(KUBECONFIG_ENCODINGS).toEqual(['auto', 'plain', 'base64'])
  })

  const accepted = ENUMS.flatMap(([input, field, values]) =>
    values.flatMap((v) => [[input, field, v, v] as const, [input, field, ` ${v.toUpperCase()} `, v] as const]),
  )

  it.each(accepted)('%s (%s) reads %j as %j', (input, field, text, value) => {
    expect(settingsOf({ [input]: text })[field]).toBe(value)
  })

  it.each([
    ['mode', 'deploy', 'trigger, watch, discover, recover, drift, plan, fleet, fleet-summary'],
    ['mode', 'triggers', 'trigger, watch, discover, recover, drift, plan, fleet, fleet-summary'],
    ['fail-on', 'warnings', 'error, warning, never'],
    ['fail-on', 'always', 'error, warning, never'],
    ['kubeconfig-encoding', 'yaml', 'auto, plain, base64'],
    ['kubeconfig-encoding', 'base-64', 'auto, plain, base64'],
  ])('%s refuses %j, listing the allowed values', (input, bad, allowed) => {
    const error = configurationError({ [input]: bad })
    expect(error.message).toBe(`Input '${input}' must be one of ${allowed}; got '${bad}'.`)
  })
})

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['1h0m10s', 3_610_000],
    ['1m500ms', 60_500],
    ['1.5s', 1_500],
    ['0.25h', 900_000],
    ['1m1m', 120_000],
    ['45', 45_000],
    ['0', 0],
    [' 2m ', 120_000],
  ])('%j → %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms)
  })

  it.each(['', ' ', 'm', '5 m', '5M', '5min', '-5s', '+5s', '1d', 'h1', '1h 30m', '.5s', '5.s', '1e3s', 'abc'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeUndefined()
  })
})

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [1, '1ms'],
    [450, '450ms'],
    [999, '999ms'],
    [1_000, '1.0s'],
    [1_500, '1.5s'],
    [9_940, '9.9s'],
    [10_000, '10s'],
    [42_400, '42s'],
    [59_499, '59s'],
    [59_600, '1m'],
    [60_000, '1m'],
    [90_000, '1m30s'],
    [119_700, '2m'],
    [125_000, '2m5s'],
    [3_600_000, '60m'],
  ])('%i ms → %j', (ms, text) => {
    expect(formatDuration(ms)).toBe(text)
  })

  it.each(['1m30s', '5m', '2m5s', '45s', '250ms'])('round-trips %j through parseDuration', (text) => {
    expect(formatDuration(parseDuration(text) ?? Number.NaN)).toBe(text)
  })
})

describe('rendering inputs', () => {
  it('reads cluster-root as a repository directory, ./ and trailing slashes dropped', () => {
    expect(settingsOf({ 'cluster-root': './clusters/production/' }).clusterRoot).toBe('clusters/production')
    expect(settingsOf({ 'cluster-root': '.' }).clusterRoot).toBe('')
  })

  it('refuses a cluster-root that leaves the repository, saying what is expected', () => {
    expect(configurationError({ 'cluster-root': '../other' }).message).toBe(
      "Input 'cluster-root' must be a directory inside the repository, such as clusters/production; got '../other'.",
    )
    expect(configurationError({ 'cluster-root': '/etc' }).message).toContain("got '/etc'")
  })

  it('reads git-repository as <namespace>/<name>, a bare name in flux-system', () => {
    expect(settingsOf({ 'git-repository': 'infra/fleet' }).gitRepository).toBe('infra/fleet')
    expect(settingsOf({ 'git-repository': 'fleet' }).gitRepository).toBe('flux-system/fleet')
    expect(configurationError({ 'git-repository': 'a/b/c' }).message).toContain('<namespace>/<name> of a Flux GitRepository')
  })

  it('accepts the deprecated kustomize-path, ignores it and says so once', () => {
    expect(settingsOf({ 'kustomize-path': '/opt/bin/kustomize' }).deprecations).toEqual([
      "Input 'kustomize-path' is deprecated and ignored: Flux Kustomizations are rendered by Flux's own kustomize code, built into helmrelease-trigger and sandboxed; remove the input.",
    ])
    expect(settingsOf({}).deprecations).toEqual([])
  })
})

describe('per-mode projections', () => {
  const settings = parseSettings((name) => ({ 'dry-run': 'true', 'github-token': 'ghs_secret', 'from-git': 'true', namespaces: 'apps' })[name] ?? '')

  it('hand the trigger pipeline the fields it reads, with their values, and never the token', () => {
    const options = triggerRunOptionsOf(settings)
    expect(options).toMatchObject({ dryRun: true, annotationPrefix: settings.annotationPrefix, timeoutMs: settings.timeoutMs, paths: settings.paths })
    expect(Object.keys(options)).not.toContain('githubToken')
    expect(Object.keys(options)).not.toContain('kubeconfig')
  })

  it('hand discover the fields it reads', () => {
    const options = discoverOptionsOf(settings)
    expect(options).toMatchObject({ fromGit: true, namespaces: ['apps'], dryRun: true })
    expect(Object.keys(options)).not.toContain('githubToken')
  })
})
