// Differential test: the sandbox's helmTemplate (Helm v4.2.4's engine in WebAssembly, with
// helm-controller's values and post-renderers) against the real `helm template` of the same Helm,
// built from its Go module (test/support/helm.ts), over the charts of test/support/helm-corpus/,
// each rendered from its directory and from its archive. Both outputs are compared as Kubernetes
// objects, each with the `# Source:` file it came from, exactly and in order: the manifest, the hooks
// (helm template prints them after the manifest) and the CRDs (--include-crds prints them first).
//
// The one thing taken off our side first: the origin labels helm.toolkit.fluxcd.io/name and
// helm.toolkit.fluxcd.io/namespace, which helm-controller's post-renderer adds and plain
// `helm template` has no post-renderer for (they are checked to be exactly the owner's first).
// `helm template` prints no NOTES: the notes, hook events and weights, composed values and chart
// version are compared with the release `helm install --dry-run=client` makes, for the releases
// that command can render (Helm's default capabilities, an install).

import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HelmTemplateAnswer, HelmTemplateRequest, SourceFiles } from '../../src/sandbox/protocol.ts'
import { createSandbox } from '../../src/sandbox/sandbox.ts'
import { archiveOf, HELM_CORPUS, type CorpusChart, type CorpusRelease } from '../../test/support/helm-corpus/index.ts'
import { helmBinary, helmInstallDryRun, helmTemplate, writeTree, type NativeRelease } from '../../test/support/helm.ts'

const RELEASE = 'rel'
const NAMESPACE = 'apps'
const OWNER = { name: 'the-release', namespace: 'flux-system' }
const ORIGIN_LABELS = { 'helm.toolkit.fluxcd.io/name': OWNER.name, 'helm.toolkit.fluxcd.io/namespace': OWNER.namespace }
const ARCHIVE = 'chart.tgz'

type Form = 'directory' | 'archive'

interface Doc {
  readonly source: string
  readonly id: string
  readonly object: Record<string, unknown>
}

/** Helm's `---\n# Source: <file>\n<document>` stream as objects; a file's later documents keep its source. */
function documents(text: string): Doc[] {
  const docs: Doc[] = []
  let source = ''
  for (const chunk of text.split(/^---[ \t]*$/m)) {
    const named = /^\s*# Source: (.+)$/m.exec(chunk)
    if (named?.[1] !== undefined && chunk.slice(0, named.index).trim() === '') source = named[1]
    for (const doc of parseAllDocuments(chunk)) {
      if (doc.errors.length > 0) throw new Error(`unparsable document from ${source}: ${doc.errors[0]?.message}\n${chunk}`)
      const object = doc.toJS() as Record<string, unknown> | null
      if (object === null) continue
      const meta = (object.metadata ?? {}) as { name?: string; namespace?: string }
      docs.push({ source, id: `${String(object.kind)}/${meta.namespace ?? ''}/${meta.name ?? ''}`, object })
    }
  }
  return docs
}

function labelsOf(object: Record<string, unknown>): Record<string, unknown> | undefined {
  return (object.metadata as { labels?: Record<string, unknown> } | undefined)?.labels
}

/** An absent, null or empty labels map are one thing: the post-renderer's label transformer makes the map. */
function withoutEmptyLabels(doc: Doc): Doc {
  const labels = labelsOf(doc.object)
  if (labels === undefined || (labels !== null && Object.keys(labels).length > 0)) return doc
  const { labels: _, ...metadata } = doc.object.metadata as Record<string, unknown>
  return { ...doc, object: { ...doc.object, metadata } }
}

/** Our post-rendered document with the origin labels taken off, after checking they are the owner's. */
function withoutOriginLabels(doc: Doc): Doc {
  const labels = { ...labelsOf(doc.object) }
  expect({ id: doc.id, name: labels['helm.toolkit.fluxcd.io/name'], namespace: labels['helm.toolkit.fluxcd.io/namespace'] }).toEqual({
    id: doc.id,
    name: ORIGIN_LABELS['helm.toolkit.fluxcd.io/name'],
    namespace: ORIGIN_LABELS['helm.toolkit.fluxcd.io/namespace'],
  })
  for (const key of Object.keys(ORIGIN_LABELS)) delete labels[key]
  const metadata = { ...(doc.object.metadata as Record<string, unknown>), labels }
  return withoutEmptyLabels({ ...doc, object: { ...doc.object, metadata } })
}

/** Our answer laid out as `helm template --include-crds` prints it: CRDs, manifest, hooks. */
function ourDocuments(answer: HelmTemplateAnswer): Doc[] {
  const crds = (answer.crds ?? []).flatMap((crd) => documents(`---\n# Source: ${crd.path}\n${crd.manifest}\n`))
  const rendered = documents(answer.manifest ?? '')
  const hooks = (answer.hooks ?? []).flatMap((hook) => documents(`---\n# Source: ${hook.path}\n${hook.manifest}\n`))
  return [...crds.map(withoutEmptyLabels), ...[...rendered, ...hooks].map(withoutOriginLabels)]
}

/**
 * An error's lines without what the CLI adds (`Error: `, the --debug hint), sorted: Helm lists a
 * schema's violations in no fixed order, run to run.
 */
function messageLines(message: string): string[] {
  const text = message.replace(/^Error: /, '').replace(/\n+Use --debug flag to render out invalid YAML$/, '')
  return text.trim().split('\n').sort()
}

const bySourceAndId = (a: Doc, b: Doc): number => `${a.id} ${a.source}`.localeCompare(`${b.id} ${b.source}`)

function nativeRelease(release: CorpusRelease): NativeRelease {
  return {
    release: RELEASE,
    namespace: NAMESPACE,
    ...(release.values === undefined ? {} : { values: release.values }),
    ...(release.set === undefined ? {} : { set: release.set }),
    ...(release.kubeVersion === undefined ? {} : { kubeVersion: release.kubeVersion }),
    ...(release.apiVersions === undefined ? {} : { apiVersions: release.apiVersions }),
    ...(release.isUpgrade === undefined ? {} : { isUpgrade: release.isUpgrade }),
  }
}

/** --set as helm-controller gets it: valuesFrom entries with a targetPath, read from one ConfigMap. */
function setAsValuesFrom(set: Readonly<Record<string, string>>): Pick<HelmTemplateRequest, 'valuesFrom' | 'objects'> {
  const entries = Object.entries(set)
  const name = 'set-values'
  return {
    valuesFrom: entries.map(([path], i) => ({ kind: 'ConfigMap', name, valuesKey: `v${i}`, targetPath: path })),
    objects: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: OWNER.namespace },
        data: Object.fromEntries(entries.map(([, value], i) => [`v${i}`, value])),
      },
    ],
  }
}

function request(release: CorpusRelease, form: Form): HelmTemplateRequest {
  return {
    ...(form === 'archive' ? { archive: ARCHIVE } : {}),
    release: RELEASE,
    namespace: NAMESPACE,
    // `helm template` renders revision 1, an install unless --is-upgrade.
    revision: 1,
    isUpgrade: release.isUpgrade === true,
    owner: OWNER,
    ...(release.values === undefined ? {} : { values: release.values }),
    ...(release.set === undefined ? {} : setAsValuesFrom(release.set)),
    ...(release.kubeVersion === undefined ? {} : { kubeVersion: release.kubeVersion }),
    ...(release.apiVersions === undefined ? {} : { apiVersions: release.apiVersions }),
  }
}

interface Laid {
  /** What the native helm reads: the chart directory or the archive file. */
  readonly path: string
  /** What the sandbox gets. */
  readonly files: SourceFiles
}

describe('helmTemplate matches the real helm template (Helm v4.2.4) over a corpus of charts', () => {
  const sandbox = createSandbox()
  const temporary: string[] = []
  const laid = new Map<string, Laid>()
  let binary: string

  function layOut(chart: CorpusChart, form: Form): Laid {
    const key = `${chart.name} ${form}`
    let found = laid.get(key)
    if (found === undefined) {
      const bytes = (content: string | Uint8Array): Uint8Array => (typeof content === 'string' ? new TextEncoder().encode(content) : content)
      if (form === 'directory') {
        const dir = writeTree(chart.files)
        temporary.push(dir)
        found = { path: dir, files: chart.files.map(([path, content]) => [path, bytes(content)] as const) }
      } else {
        const archive = archiveOf(chart)
        const dir = writeTree([[ARCHIVE, archive]])
        temporary.push(dir)
        found = { path: join(dir, ARCHIVE), files: [[ARCHIVE, archive]] }
      }
      laid.set(key, found)
    }
    return found
  }

  beforeAll(async () => {
    binary = await helmBinary()
  })

  afterAll(async () => {
    await sandbox.close()
    for (const dir of temporary) rmSync(dir, { recursive: true, force: true })
  })

  const cases = HELM_CORPUS.flatMap((chart) =>
    chart.releases.flatMap((release) => (['directory', 'archive'] as const).map((form) => ({ chart, release, form }))),
  )

  for (const { chart, release, form } of cases) {
    const title = `${chart.name}, ${release.name}, from its ${form}`
    it(title, () => compare(chart, release, form))
  }

  async function compare(chart: CorpusChart, release: CorpusRelease, form: Form): Promise<void> {
    const { path, files } = layOut(chart, form)
    const [native, ours] = await Promise.all([helmTemplate(binary, path, nativeRelease(release)), sandbox.helmTemplate(request(release, form), files)])

    if ('failed' in native) {
      // Helm refuses the release: so must we, with the same message.
      expect({ error: ours.error, manifest: ours.manifest }).toEqual({ error: expect.any(String), manifest: undefined })
      expect(messageLines(ours.error ?? '')).toEqual(messageLines(native.failed))
      return
    }
    expect(ours.error).toBeUndefined()
    const theirs = documents(native.stdout).map(withoutEmptyLabels)
    const mine = ourDocuments(ours)
    expect(theirs.length).toBeGreaterThan(0)
    // The same objects from the same files, exactly; then in the same order.
    expect([...mine].sort(bySourceAndId)).toEqual([...theirs].sort(bySourceAndId))
    expect(mine.map((d) => `${d.source} ${d.id}`)).toEqual(theirs.map((d) => `${d.source} ${d.id}`))

    if (release.kubeVersion !== undefined || release.apiVersions !== undefined || release.isUpgrade === true) return
    const stored = await helmInstallDryRun(binary, path, nativeRelease(release))
    if ('failed' in stored) throw new Error(`helm install --dry-run=client failed where helm template did not: ${String(stored.failed)}`)
    const metadata = (stored.chart as { metadata: { name: string; version: string } }).metadata
    const hooks = ((stored.hooks ?? []) as { name: string; kind: string; path: string; events?: string[]; weight?: number }[]).map((h) => ({
      name: h.name,
      kind: h.kind,
      path: h.path,
      events: h.events ?? [],
      weight: h.weight ?? 0,
    }))
    expect({
      notes: ours.notes ?? '',
      values: ours.values ?? {},
      chart: `${ours.chartName}@${ours.chartVersion}`,
      hooks: (ours.hooks ?? []).map(({ name, kind, path, events, weight }) => ({ name, kind, path, events, weight })),
    }).toEqual({
      notes: (stored.info as { notes?: string }).notes ?? '',
      values: stored.config ?? {},
      chart: `${metadata.name}@${metadata.version}`,
      hooks,
    })
  }
})
