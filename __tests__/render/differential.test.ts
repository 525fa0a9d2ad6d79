// Differential test: a generated corpus of Flux repository layouts (test/support/render-corpus.ts)
// rendered by renderChange (Flux's kustomize code in the sandbox), compared with the real, native
// kustomize run alone on the same trees. Where
// Flux adds semantics on top of kustomize (targetNamespace, Flux patches, postBuild substitution,
// the kustomization.yaml it generates for plain directories) the expectation is kustomize's
// output with Flux's documented rule applied, or the plain files themselves.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RenderedObject } from '../../src/core/rendered.ts'
import { createGitReader } from '../../src/git/reader.ts'
import { isRendered, renderChange, type RenderedChange } from '../../src/render/render-change.ts'
import { createSandbox } from '../../src/sandbox/sandbox.ts'
import { kustomizeAlone, kustomizeBinary } from '../../test/support/kustomize.ts'
import { CLUSTER_ROOT, CLUSTER_VALUE, CORPUS_URL, corpusLayouts, corpusRepository, type Layout } from '../../test/support/render-corpus.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const KINDS = new Set(['ConfigMap', 'Secret', 'HelmRelease'])
const layouts = corpusLayouts()

/** What the comparison looks at: identity and content, nothing kustomize-controller adds later. */
interface Compared {
  readonly id: string
  readonly content: unknown
}

function compared(object: Readonly<Record<string, unknown>>): Compared | undefined {
  const kind = object.kind
  if (typeof kind !== 'string' || !KINDS.has(kind)) return undefined
  const meta = (object.metadata ?? {}) as { name?: string; namespace?: string; labels?: unknown; annotations?: unknown }
  const content =
    kind === 'HelmRelease'
      ? { spec: object.spec }
      : {
          data: object.data ?? {},
          binaryData: object.binaryData,
          stringData: object.stringData,
          type: object.type,
          labels: meta.labels,
          annotations: meta.annotations,
        }
  return { id: `${kind}/${meta.namespace ?? ''}/${meta.name ?? ''}`, content }
}

const byId = (a: Compared, b: Compared): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Flux's documented layer over kustomize's output, for the expectation side. */
function fluxSemantics(layout: Layout, yamlText: string): Record<string, unknown>[] {
  // postBuild.substitute runs on each object's YAML: ${cluster} known, ${missing:=fallback} defaulted.
  const text = layout.substitution ? yamlText.replaceAll('${cluster}', CLUSTER_VALUE).replaceAll('${missing:=fallback}', 'fallback') : yamlText
  return parseAllDocuments(text).flatMap((doc) => {
    const object = doc.toJS() as Record<string, unknown> | null
    if (object === null) return []
    const meta = { ...(object.metadata as Record<string, unknown>) }
    // targetNamespace sets every object's namespace (all compared kinds are namespaced).
    if (layout.targetNamespace) meta.namespace = layout.targetNamespace
    const spec = object.kind === 'HelmRelease' && layout.fluxPatch ? { ...(object.spec as Record<string, unknown>), interval: '5m' } : object.spec
    return [{ ...object, metadata: meta, ...(spec === undefined ? {} : { spec }) }]
  })
}

describe('rendering matches the real kustomize over a generated corpus', () => {
  let repo: Repo
  let binary: string
  let rendered: RenderedChange
  const sandbox = createSandbox()

  beforeAll(async () => {
    binary = await kustomizeBinary()
    repo = createRepo('hrt-render-corpus-')
    repo.write(corpusRepository(layouts))
    const head = repo.commit('corpus')
    const reader = await createGitReader({ cwd: repo.dir })
    const result = await renderChange(reader, {
      base: undefined,
      head,
      changedFiles: [],
      repositoryUrls: [CORPUS_URL],
      clusterRoot: CLUSTER_ROOT,
      sandbox,
      scope: 'all',
    })
    if (!isRendered(result)) throw new Error('the corpus has Flux Kustomizations; renderChange must not fall back')
    rendered = result
  })
  afterAll(async () => {
    repo?.cleanup()
    await sandbox.close()
  })

  it('renders every Kustomization of the chain (root, nested two levels deep) without a problem', () => {
    expect(rendered.head.problems).toEqual([])
    expect(rendered.head.notRendered).toEqual([])
    expect(rendered.head.kustomizations).toEqual(
      ['flux-system/deeper', 'flux-system/flux-system', 'flux-system/infra', ...layouts.map((l) => `flux-system/${l.app}`)].sort(),
    )
  })

  it('covers every value of every dimension', () => {
    const values = (key: keyof Layout): Set<unknown> => new Set(layouts.map((l) => l[key]))
    expect(values('form')).toEqual(new Set(['files', 'files-key', 'literals', 'envs', 'all']))
    expect(values('overlay')).toEqual(new Set(['none', 'merge', 'replace', 'create']))
    expect(values('content')).toEqual(new Set(['ascii', 'crlf', 'non-ascii']))
    expect(values('patch')).toEqual(new Set(['none', 'strategic', 'json6902']))
    for (const flag of ['disableHash', 'options', 'affixes', 'component', 'nameReference', 'substitution', 'fluxPatch', 'plain'] as const)
      expect(values(flag)).toEqual(new Set([true, false]))
  })

  it.each(layouts.map((l) => [l.app, l] as const))('%s: ConfigMaps, Secrets and HelmReleases equal kustomize + Flux semantics', async (_name, layout) => {
    const ours = rendered.head.objects
      .filter((o: RenderedObject) => o.kustomization === `flux-system/${layout.app}`)
      .flatMap((o) => compared(o.object) ?? [])
      .sort(byId)
    let reference: Record<string, unknown>[]
    if (layout.plain) {
      // No kustomization.yaml: Flux applies the YAML files as written (nested ones too, and whole kustomization directories).
      const texts = await Promise.all(['source.yaml', 'nested/release.yaml'].map((f) => readFile(join(repo.dir, layout.path, f), 'utf8')))
      const bundled = await kustomizeAlone(binary, join(repo.dir, layout.path, 'bundled'))
      reference = fluxSemantics(layout, [...texts, bundled].join('\n---\n'))
    } else {
      reference = fluxSemantics(layout, await kustomizeAlone(binary, join(repo.dir, layout.path)))
    }
    const expected = reference.flatMap((o) => compared(o) ?? []).sort(byId)
    expect(expected.length).toBeGreaterThanOrEqual(2)
    expect(ours).toEqual(expected)
  })

  it('keeps the hash suffix where generatorOptions leave it on, and rewrites valuesFrom where a nameReference asks', () => {
    for (const layout of layouts.filter((l) => !l.plain && l.overlay !== 'replace')) {
      const objects = rendered.head.objects.filter((o) => o.kustomization === `flux-system/${layout.app}`)
      const source = objects.find((o) => o.kind === layout.kind && o.name.includes(`values-${layout.index}`))
      const release = objects.find((o) => o.kind === 'HelmRelease')
      expect(source, layout.app).toBeDefined()
      expect(/-[a-z0-9]{10}$/.test(source?.name ?? ''), layout.app).toBe(!layout.disableHash)
      const reference = ((release?.object.spec as { valuesFrom: { name: string }[] }).valuesFrom[0] ?? { name: '' }).name
      expect(reference === source?.name, layout.app).toBe(layout.nameReference || (!layout.disableHash ? false : !layout.affixes))
    }
  })
})
