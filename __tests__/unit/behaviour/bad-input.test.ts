// Bad input at scale: fast-check generates thousands of malformed manifests, input values,
// kubeconfigs and event payloads against the pure parsers. None may throw anything but a
// ConfigurationError, and each error must name what was wrong (file and line, input, path)
// without echoing a secret. Alias bombs and huge files are rejected in bounded time.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigurationError } from '../../../src/lib/errors.ts'
import { loadKubeconfig } from '../../../src/kube/kubeconfig.ts'
import { DEFAULT_MAX_BYTES, parseManifestFile, type ManifestOptions } from '../../../src/core/manifest.ts'
import type { FileContent, FileProblem } from '../../../src/core/model.ts'
import { parseEvent } from '../../../src/github/event.ts'
import { KUBECONFIG_ENCODINGS, parseSettings } from '../../../src/settings.ts'
import { runTrigger } from '../../../src/modes/trigger/pipeline.ts'
import { FakeCluster, FakeClock, FakeGit } from '../../../test/support/fakes.ts'

const RUNS = 1_000
const OPTIONS: ManifestOptions = { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true }
const encoder = new TextEncoder()
const file = (text: string): FileContent => ({ type: 'file', bytes: encoder.encode(text) })

/** Problems a file as a whole can have: they name the file and have no line. */
const FILE_LEVEL = /^(binary file|file is not valid UTF-8|file is larger than|symbolic link)/

function checkProblems(path: string, text: string | undefined, problems: readonly FileProblem[]): void {
  const lines = text === undefined ? Infinity : text.split(/\r\n|\r|\n/).length + 1
  for (const p of problems) {
    expect(p.file).toBe(path)
    expect(p.message.length).toBeGreaterThan(0)
    expect(['error', 'warning', 'notice']).toContain(p.severity)
    if (p.line === undefined) expect(p.message).toMatch(FILE_LEVEL)
    else {
      expect(Number.isInteger(p.line)).toBe(true)
      expect(p.line).toBeGreaterThanOrEqual(1)
      expect(p.line).toBeLessThanOrEqual(lines)
    }
  }
}

// ---- generators for manifests ------------------------------------------------------------

const yamlScalar = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom(
    '"true"',
    'true',
    '5432',
    '~',
    'null',
    '[]',
    '{}',
    '*a',
    '&a x',
    '!!binary AAAA',
    '!!str',
    "'q'",
    '"\\u0000"',
    '|',
    '>-',
    '<<: *a',
    '{{ .Values.x }}',
    '- a',
    ': :',
    '? k',
    '%YAML 1.2',
  ),
  fc.integer().map(String),
)

const dnsish = fc.oneof(fc.constantFrom('web', 'api', 'a, b', ' , ,', 'Web', '-x', 'a'.repeat(64), 'x.y', ''), fc.string({ maxLength: 12 }))

/** A ConfigMap/Secret/HelmRelease-shaped document with random annotations, labels, data and aliases. */
const manifestDoc = fc
  .record({
    kind: fc.constantFrom('ConfigMap', 'Secret', 'HelmRelease', 'Kustomization', 'List', '', 'configmap'),
    apiVersion: fc.constantFrom('v1', 'helm.toolkit.fluxcd.io/v2', 'kustomize.config.k8s.io/v1beta1', '', '[v1'),
    name: dnsish,
    namespace: fc.option(dnsish, { nil: undefined }),
    label: fc.option(yamlScalar, { nil: undefined }),
    targets: fc.option(dnsish, { nil: undefined }),
    targetNs: fc.option(dnsish, { nil: undefined }),
    extraAnnotations: fc.array(fc.tuple(fc.string({ maxLength: 15 }), yamlScalar), { maxLength: 3 }),
    data: fc.array(fc.tuple(fc.string({ maxLength: 10 }), yamlScalar), { maxLength: 4 }),
    field: fc.constantFrom('data', 'stringData', 'binaryData', 'spec', 'sops'),
    anchor: fc.boolean(),
  })
  .map((d) => {
    const q = (s: string): string => JSON.stringify(s)
    const lines = [
      `apiVersion: ${d.apiVersion}`,
      `kind: ${d.kind}`,
      `metadata:${d.anchor ? ' &meta' : ''}`,
      `  name: ${d.name}`,
      ...(d.namespace === undefined ? [] : [`  namespace: ${d.namespace}`]),
      '  labels:',
      ...(d.label === undefined ? [] : [`    nebius.ai/helmrelease-trigger-operator: ${d.label}`]),
      '  annotations:',
      ...(d.targets === undefined ? [] : [`    nebius.ai/helmreleases-name: ${d.targets}`]),
      ...(d.targetNs === undefined ? [] : [`    nebius.ai/helmreleases-namespace: ${d.targetNs}`]),
      ...d.extraAnnotations.map(([k, v]) => `    ${q(k)}: ${v}`),
      `${d.field}:`,
      ...d.data.map(([k, v]) => `  ${q(k)}: ${v}`),
      ...(d.anchor ? ['copy: *meta'] : []),
    ]
    return lines.join('\n')
  })

/** Valid-looking documents, then cut, spliced and joined with `---`. */
const mangled = fc
  .tuple(
    fc.array(manifestDoc, { minLength: 1, maxLength: 3 }),
    fc.nat(),
    fc.nat(),
    fc.string({ maxLength: 8 }),
    fc.constantFrom('\n---\n', '\n', '\r\n---\r\n', '\n...\n'),
  )
  .map(([docs, cut, at, insert, separator]) => {
    const text = docs.join(separator)
    const i = at % (text.length + 1)
    const spliced = text.slice(0, i) + insert + text.slice(i)
    return cut % 4 === 0 ? spliced.slice(0, cut % (spliced.length + 1)) : spliced
  })

const anyText = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }), mangled, manifestDoc)

describe('parseManifestFile with malformed input', () => {
  it(`never throws; every problem names the file and, inside a document, a line (${RUNS * 3} cases)`, () => {
    fc.assert(
      fc.property(anyText, fc.constantFrom('apps/cm.yaml', 'kustomization.yaml', 'a b/ü.yml'), (text, path) => {
        const result = parseManifestFile(path, file(text), OPTIONS)
        checkProblems(path, text, result.problems)
        for (const s of result.sources) expect(s.digest).toMatch(/^sha256:[0-9a-f]{64}$/)
      }),
      { numRuns: RUNS * 3 },
    )
  }, 60_000)

  it(`random bytes (NUL, invalid UTF-8, BOMs) are skipped with a file-level problem, never thrown (${RUNS} cases)`, () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      fc.uint8Array({ maxLength: 50 }).map((b) => Uint8Array.from([0xef, 0xbb, 0xbf, ...b])),
    )
    fc.assert(
      fc.property(bytes, (b) => {
        const result = parseManifestFile('bin.yaml', { type: 'file', bytes: b }, OPTIONS)
        checkProblems('bin.yaml', undefined, result.problems)
        if (b.includes(0)) expect(result.problems).toMatchObject([{ message: 'binary file (contains NUL bytes), skipped' }])
      }),
      { numRuns: RUNS },
    )
  }, 60_000)

  it('an alias bomb is rejected with the file and line, in bounded time', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for (let i = 1; i < 10; i++) {
      const prev = String.fromCharCode(96 + i)
      const name = String.fromCharCode(97 + i)
      levels.push(`${name}: &${name} [${Array(10).fill(`*${prev}`).join(',')}]`)
    }
    const bomb = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  ${levels.join('\n  ')}\n`
    const result = parseManifestFile('bomb.yaml', file(bomb), OPTIONS)
    expect(result.sources).toEqual([])
    expect(result.problems).toMatchObject([{ severity: 'error', file: 'bomb.yaml', line: 1, message: expect.stringContaining('document skipped') }])
  })

  it('a 5 MB file is rejected without being parsed; one just under the limit parses in bounded time', () => {
    const doc = (i: number): string =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${String(i).padStart(6, '0')}\n  namespace: apps\ndata:\n  k: "${'v'.repeat(40)}"\n`
    const huge = Array.from({ length: Math.ceil((5 * 1024 * 1024) / doc(0).length) }, (_, i) => doc(i)).join('---\n')
    const rejected = parseManifestFile('huge.yaml', file(huge), OPTIONS)
    expect(rejected).toMatchObject({
      sources: [],
      releases: [],
      problems: [{ severity: 'notice', file: 'huge.yaml', message: expect.stringMatching(/^file is larger than 1 MiB \(5(\.\d)? MiB\), skipped$/) }],
    })

    const count = Math.floor((DEFAULT_MAX_BYTES - 1024) / (doc(0).length + 4))
    const big = Array.from({ length: count }, (_, i) => doc(i)).join('---\n')
    expect(big.length).toBeLessThanOrEqual(DEFAULT_MAX_BYTES)
    const parsed = parseManifestFile('big.yaml', file(big), OPTIONS)
    expect(parsed.problems).toEqual([])
  })
})

describe('resource bounds beyond aliases', () => {
  // Memory is measured, time is not: a wall-clock bound flakes on a loaded machine, and the
  // test timeout already catches a parse that never ends.
  const measured = <T>(fn: () => T): { value: T; heapMb: number } => {
    const heap = process.memoryUsage().heapUsed
    const value = fn()
    return { value, heapMb: (process.memoryUsage().heapUsed - heap) / 2 ** 20 }
  }

  it('a file of 60,000 short keys parses in bounded time: the duplicate-key check is linear', () => {
    const keys = Array.from({ length: 60_000 }, (_, i) => `  k${i}: v`).join('\n')
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wide\n  namespace: apps\ndata:\n${keys}\n`
    // Sources need the label; wide.yaml is checked for time and problems alone.
    expect(text.length).toBeLessThan(DEFAULT_MAX_BYTES)
    const { value, heapMb } = measured(() => parseManifestFile('wide.yaml', file(text), OPTIONS))
    // About 1 s on a busy CI core; the library's quadratic check took half a minute here.
    expect(heapMb).toBeLessThan(512)
    expect(value.problems).toEqual([])
    // ...and a repeated key among them is still found, at its line.
    const repeated = parseManifestFile('wide.yaml', file(`${text}  k4711: again\n`), OPTIONS)
    expect(repeated.problems).toEqual([expect.objectContaining({ severity: 'error', line: 60_007, message: expect.stringMatching(/^invalid YAML: .*unique/) })])
  }, 60_000)

  it('a values.yaml of 50,000 keys inside one ConfigMap value is digested in bounded time', () => {
    const inner = Array.from({ length: 50_000 }, (_, i) => `    k${i}: ${i}`).join('\n')
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: values\n  namespace: apps\n  labels:\n    nebius.ai/helmrelease-trigger-operator: "true"\n  annotations:\n    nebius.ai/helmreleases-name: web\ndata:\n  values.yaml: |\n${inner}\n`
    expect(text.length).toBeLessThan(DEFAULT_MAX_BYTES)
    const { value } = measured(() => parseManifestFile('values.yaml', file(text), OPTIONS))
    expect(value.sources[0]?.digest).toMatch(/^sha256:[0-9a-f]{64}$/)
  }, 60_000)

  it('100,000 levels of nesting are a problem with a line, not a crash', () => {
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  k: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`
    const { value, heapMb } = measured(() => parseManifestFile('deep.yaml', file(text), OPTIONS))
    expect(heapMb).toBeLessThan(512)
    expect(value.sources).toEqual([])
    expect(value.problems.length).toBeGreaterThan(0)
    for (const p of value.problems) expect(p).toMatchObject({ severity: 'error', file: 'deep.yaml', line: 6 })
  }, 60_000)

  it('the alias bomb and the 5 MB file stay within a bounded heap too', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for (let i = 1; i < 10; i++)
      levels.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(',')}]`,
      )
    const bomb = measured(() =>
      parseManifestFile('bomb.yaml', file(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  ${levels.join('\n  ')}\n`), OPTIONS),
    )
    expect(bomb.heapMb).toBeLessThan(256)
    const huge = measured(() => parseManifestFile('huge.yaml', { type: 'file', bytes: new Uint8Array(5 * 2 ** 20).fill(0x61) }, OPTIONS))
    expect(huge.heapMb).toBeLessThan(256)
    expect(huge.value.problems[0]?.message).toMatch(/^file is larger than 1 MiB/)
  })
})

describe('the engine over commits of malformed files', () => {
  it(`plans, triggers or fails cleanly: no throw but ConfigurationError, no unhandled rejection, every problem names a committed file (${RUNS / 2} cases)`, async () => {
    const rejections: unknown[] = []
    const onRejection = (reason: unknown): void => {
      rejections.push(reason)
    }
    process.on('unhandledRejection', onRejection)
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(fc.constantFrom('a.yaml', 'dir/b.yml', 'kustomization.yaml', 'c.json'), anyText, anyText), { minLength: 1, maxLength: 4 }),
          async (files) => {
            const before = Object.fromEntries(files.map(([path, text]) => [path, text]))
            const after = Object.fromEntries(files.map(([path, , text]) => [path, text]))
            const git = new FakeGit().commit('a', undefined, before).commit('b', 'a', after)
            const cluster = new FakeCluster()
            const settings = parseSettings((name) => ({ wait: 'false', 'wait-for-apply': 'false', paths: '**' })[name] ?? '')
            const log = { info: () => undefined, warning: () => undefined }
            try {
              const report = await runTrigger(
                settings,
                { eventName: 'push', event: { before: 'a', after: 'b' }, sha: 'b', runUrl: undefined, refused: undefined },
                { git, connect: async () => cluster, clock: new FakeClock(), log },
              )
              for (const p of report.problems) expect(Object.keys(after).concat(Object.keys(before))).toContain(p.file)
              for (const r of report.results) expect(['Triggered', 'Skipped', 'Failed']).toContain(r.status)
            } catch (error) {
              expect(error).toBeInstanceOf(ConfigurationError)
            }
          },
        ),
        { numRuns: RUNS / 2 },
      )
      // Let any stray promise settle before looking.
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(rejections).toEqual([])
    } finally {
      process.off('unhandledRejection', onRejection)
    }
  }, 120_000)
})

// ---- parseSettings ------------------------------------------------------------------------

describe('parseSettings with random input values', () => {
  const NAMES = [
    'mode',
    'kubeconfig-encoding',
    'context',
    'base',
    'head',
    'full-sync',
    'paths',
    'annotation-prefix',
    'default-namespace',
    'force',
    'reset',
    'discover',
    'wait-for-apply',
    'apply',
    'wait',
    'timeout',
    'max-concurrency',
    'dry-run',
    'allow-pull-requests',
    'fail-on',
    'semantic-digest',
    'namespaces',
    'from-git',
    'recover-patterns',
    'recover-max-attempts',
    'recover-backoff',
  ]
  const value = fc.oneof(
    fc.constantFrom(
      '',
      'true',
      'False',
      'yes',
      '1',
      '5m',
      '90s',
      '0s',
      '-1',
      '1h30m',
      '10',
      '1001',
      'trigger',
      'WATCH',
      'bogus',
      'nebius.ai',
      'Not_A.Prefix',
      'flux-system',
      'a,b',
      'ns-1\nns-2',
      '(',
      '[a-',
      '**/*.yaml',
      'base64',
      ' ',
    ),
    fc.string({ maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 30 }),
  )
  const inputs = fc.dictionary(fc.constantFrom(...NAMES, 'kubeconfig', 'unknown-input'), value, { maxKeys: 8 })

  it(`returns Settings or a ConfigurationError naming a given input (${RUNS * 2} cases)`, () => {
    fc.assert(
      fc.property(inputs, (given) => {
        const read = (name: string): string => given[name] ?? ''
        try {
          const settings = parseSettings(read)
          expect(settings.maxConcurrency).toBeGreaterThanOrEqual(1)
          expect(settings.timeoutMs).toBeGreaterThan(0)
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigurationError)
          const named = /^Input '([a-z-]+)'/.exec((error as Error).message)?.[1]
          expect(named, (error as Error).message).toBeDefined()
          // The input named is one that was given a (non-blank) value.
          expect((given[named ?? ''] ?? '').trim()).not.toBe('')
        }
      }),
      { numRuns: RUNS * 2 },
    )
  }, 60_000)
})

// ---- loadKubeconfig -----------------------------------------------------------------------

describe('loadKubeconfig with random kubeconfig text', () => {
  const home = mkdtempSync(join(tmpdir(), 'hrt-fuzz-home-'))
  afterAll(() => rmSync(home, { recursive: true, force: true }))
  const env = { HOME: home }

  const secret = fc.string({ minLength: 6, maxLength: 12, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZ23456789') }).map((s) => `S3CR3T${s}`)
  const fieldValue = (marker: string) =>
    fc.constantFrom(marker, `"${marker}"`, `[${marker}]`, `{a: ${marker}}`, `${marker}: x`, Buffer.from(marker).toString('base64'), `|\n      ${marker}`)

  /** Kubeconfig-shaped YAML with the secret in user fields and random damage. */
  const shaped = secret.chain((marker) =>
    fc
      .record({
        token: fieldValue(marker),
        key: fieldValue(marker),
        clusters: fc.constantFrom(
          'clusters:\n  - name: c\n    cluster:\n      server: https://k.test\n',
          'clusters: []\n',
          'clusters: x\n',
          'clusters:\n  - name: c\n',
          '',
        ),
        contexts: fc.constantFrom(
          'contexts:\n  - name: x\n    context: {cluster: c, user: u}\ncurrent-context: x\n',
          'contexts: 7\n',
          'current-context: nope\n',
          '',
        ),
        users: fc.constantFrom('users:\n  - name: u\n    user:\n', 'users:\n  - user:\n', 'users: {}\n', ''),
        cut: fc.nat(400),
      })
      .map((r) => {
        const text = `apiVersion: v1\nkind: Config\n${r.clusters}${r.contexts}${r.users}      token: ${r.token}\n      client-key-data: ${r.key}\n      password: ${marker}\n`
        return { marker, text: r.cut > 300 ? text : text.slice(0, Math.max(text.indexOf(marker) + marker.length, r.cut)) }
      }),
  )
  const arbitrary = fc.oneof(
    shaped,
    shaped.map((s) => ({ ...s, text: Buffer.from(s.text).toString('base64') })),
    secret.chain((marker) =>
      fc.tuple(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 })).map(([a, b]) => ({ marker, text: `${a}${marker}${b}` })),
    ),
  )

  it(`fails with a ConfigurationError that never contains the input or its secrets (${RUNS * 2} cases)`, () => {
    fc.assert(
      fc.property(
        arbitrary,
        fc.constantFrom(...KUBECONFIG_ENCODINGS),
        fc.option(fc.constantFrom('x', 'prod'), { nil: undefined }),
        ({ marker, text }, encoding, context) => {
          if (text.trim() === '') return
          try {
            const loaded = loadKubeconfig({ kubeconfig: text, encoding, context, env })
            // A text that happens to be a usable kubeconfig: its secrets are listed for masking.
            const token: unknown = loaded.config.getCurrentUser()?.token
            if (typeof token === 'string' && token.includes(marker)) expect(loaded.secrets).toContain(token)
          } catch (error) {
            expect(error).toBeInstanceOf(ConfigurationError)
            const message = (error as Error).message
            expect(message).not.toContain(marker)
            expect(message).not.toContain(Buffer.from(marker).toString('base64'))
            if (text.trim().length >= 12) expect(message).not.toContain(text.trim())
          }
        },
      ),
      { numRuns: RUNS * 2 },
    )
  }, 60_000)
})

// ---- parseEvent ---------------------------------------------------------------------------

describe('parseEvent with random JSON', () => {
  const PATH = '/home/runner/work/_temp/_github_workflow/event.json'
  const anyValue = fc.oneof(fc.jsonValue(), fc.constantFrom(undefined, null, '', 'abc123', true, 0, [], {}))
  const sha = fc.oneof(fc.string({ minLength: 40, maxLength: 40, unit: fc.constantFrom(...'0123456789abcdef') }), anyValue)
  const eventish = fc.record(
    {
      before: sha,
      after: sha,
      deleted: anyValue,
      ref: anyValue,
      pull_request: fc.oneof(
        anyValue,
        fc.record({ base: fc.oneof(anyValue, fc.record({ sha })), head: fc.oneof(anyValue, fc.record({ sha })) }, { requiredKeys: [] }),
      ),
    },
    { requiredKeys: [] },
  )
  const text = fc.oneof(
    eventish.map((e) => JSON.stringify(e)),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 60 }),
    eventish.map((e) => JSON.stringify(e).slice(0, -1)),
  )

  it(`returns a typed event or a ConfigurationError naming the file and the field (${RUNS * 3} cases)`, () => {
    fc.assert(
      fc.property(text, (t) => {
        try {
          const event = parseEvent(t, PATH)
          for (const k of ['before', 'after'] as const) if (event[k] !== undefined) expect(typeof event[k]).toBe('string')
          if (event.deleted !== undefined) expect(typeof event.deleted).toBe('boolean')
          if (event.pull_request !== undefined) {
            expect(event.pull_request.base.sha).toMatch(/./)
            expect(event.pull_request.head.sha).toMatch(/./)
          }
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigurationError)
          const message = (error as Error).message
          expect(message).toContain(`the event payload ${PATH}`)
          expect(message).toMatch(/is not valid JSON$|is not a JSON object$|: '(before|after|deleted|pull_request\.(base|head)\.sha)' must be /)
        }
      }),
      { numRuns: RUNS * 3 },
    )
  }, 60_000)
})
