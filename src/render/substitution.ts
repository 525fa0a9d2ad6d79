// Where a Flux Kustomization's postBuild values come from, offline: the ConfigMaps and Secrets
// its substituteFrom names, found among the objects already rendered, else in the repository's
// files, else (when connected) in the cluster. The substitution itself is Flux's own, in the
// sandbox. Also: whether a range can have changed those values (a Kustomization substituting
// from an edited object must be rendered again).

import { isDnsSubdomain } from '../core/keys.ts'
import type { RenderedObject } from '../core/rendered.ts'
import { quoted } from '../lib/untrusted.ts'
import type { ValuesObject } from '../sandbox/protocol.ts'
import { posix } from 'node:path'
import { generatorSources, kustomizationOf } from './closure.ts'
import { isKustomizationFile, type Commit } from './commit.ts'
import { FLUX_NAMESPACE, isRecord, type FluxKustomization } from './flux-objects.ts'
import { patchFiles } from './provenance.ts'
import type { Producer, RenderContext } from './render-context.ts'
import { objectsIn, YAML_FILE } from './scan.ts'
import type { Snapshot } from './snapshot.ts'

export interface SubstitutionInputs {
  readonly values: readonly ValuesObject[]
  /** `Kind/name` references found nowhere: Flux would need them from the cluster. */
  readonly absent: readonly string[]
  /** One sentence about the references found nowhere or not valid, when there are some. */
  readonly problem?: string
}

/** The substituteFrom objects of `k` that can be found, in order, and those that cannot. */
export async function substitutionInputs(
  commit: Commit,
  k: FluxKustomization,
  earlier: readonly RenderedObject[],
  ctx: RenderContext,
): Promise<SubstitutionInputs> {
  const values: ValuesObject[] = []
  const absent: string[] = []
  const missing: string[] = []
  const invalid: string[] = []
  for (const ref of substituteFrom(k)) {
    const { kind, name } = ref
    if (!isDnsSubdomain(name)) {
      invalid.push(quoted(name))
      continue
    }
    const data = (await repositoryValues(commit, earlier, kind, k.namespace, name)) ?? (await ctx.options.cluster?.(kind, k.namespace, name))
    if (data !== undefined) values.push({ kind, name, data })
    else if (!ref.optional) {
      absent.push(`${kind}/${name}`)
      missing.push(`${kind}/${k.namespace}/${name}`)
    }
  }
  const problems: string[] = []
  if (missing.length > 0)
    problems.push(
      `postBuild.substituteFrom names ${missing.join(', ')}, which is neither in the repository nor readable from a cluster; its variables are substituted empty here (connect to the cluster, or mark it optional)`,
    )
  if (invalid.length > 0) problems.push(`postBuild.substituteFrom names ${invalid.join(', ')}, which is not a valid object name; Flux refuses it`)
  return { values, absent, ...(problems.length > 0 ? { problem: `${problems.join('; ')}.` } : {}) }
}

/** The ConfigMap and Secret references of spec.postBuild.substituteFrom. */
function substituteFrom(k: FluxKustomization): { kind: 'ConfigMap' | 'Secret'; name: string; optional: boolean }[] {
  const postBuild = isRecord(k.spec.postBuild) ? k.spec.postBuild : undefined
  const refs = Array.isArray(postBuild?.substituteFrom) ? postBuild.substituteFrom.filter(isRecord) : []
  return refs.flatMap((ref) => {
    const kind = ref.kind === 'Secret' ? 'Secret' : ref.kind === 'ConfigMap' ? 'ConfigMap' : undefined
    return kind === undefined || typeof ref.name !== 'string' ? [] : [{ kind, name: ref.name, optional: ref.optional === true }]
  })
}

/** A ConfigMap/Secret's data as Flux would read it, from what is already rendered, else from the files. */
async function repositoryValues(
  commit: Commit,
  earlier: readonly RenderedObject[],
  kind: 'ConfigMap' | 'Secret',
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  const rendered = earlier.find((o) => o.kind === kind && o.name === name && (o.namespace ?? FLUX_NAMESPACE) === namespace)
  if (rendered) return dataOf(rendered.object)
  // git grep (a fixed string) narrows the search to the files naming it; only those are read.
  const files = (await commit.grep(name)).filter((f) => YAML_FILE.test(f))
  await commit.snapshot.prefetch(files)
  for (const file of files) {
    for (const object of await objectsIn(commit.snapshot, file, name)) {
      const meta = isRecord(object.metadata) ? object.metadata : {}
      if (object.kind === kind && meta.name === name && (meta.namespace ?? namespace) === namespace) return dataOf(object)
    }
  }
  return undefined
}

function dataOf(object: Readonly<Record<string, unknown>>): Record<string, string> {
  const out: Record<string, string> = {}
  if (isRecord(object.data)) {
    for (const [key, value] of Object.entries(object.data)) {
      if (typeof value !== 'string') continue
      out[key] = object.kind === 'Secret' ? Buffer.from(value, 'base64').toString('utf8') : value
    }
  }
  if (object.kind === 'Secret' && isRecord(object.stringData))
    for (const [key, value] of Object.entries(object.stringData)) if (typeof value === 'string') out[key] = value
  return out
}

/**
 * A Kustomization's postBuild substitution changed with the range when an object it substitutes
 * from did: one rendered earlier whose own file, value files, kustomization files or patches the
 * range changed (or whose Kustomization's definition it changed), or one written in a file the
 * range changed. Values from the cluster are not the commit's.
 */
export async function substitutesChanged(
  k: FluxKustomization,
  earlier: readonly RenderedObject[],
  producers: ReadonlyMap<string, Producer>,
  commit: Commit,
  ctx: RenderContext,
): Promise<boolean> {
  for (const ref of substituteFrom(k)) {
    const rendered = earlier.find((o) => o.kind === ref.kind && o.name === ref.name && (o.namespace ?? FLUX_NAMESPACE) === k.namespace)
    if (rendered === undefined) {
      if (await ctx.changedMention(ref.name)) return true
      // Generated by a Kustomization not rendered yet (a sibling): the files its generator reads.
      if ((await generatorFiles(commit, ref.kind, ref.name, ctx.parsed)).some((f) => ctx.changed.has(f))) return true
      continue
    }
    const producer = producers.get(rendered.kustomization)
    if (producer === undefined || !ctx.touched.has(rendered.kustomization)) continue
    if (producer.file !== undefined && ctx.changed.has(producer.file)) return true
    const files = commit.filesOf(producer.tree)
    const patches = (await Promise.all(producer.closure.kustomizations.map((f) => patchFiles(files, f)))).flat()
    const influences = new Set(
      [rendered.origin?.file, ...Object.values(rendered.keyOrigins).map((p) => p.file)]
        .filter((f): f is string => f !== undefined)
        .concat([...producer.closure.kustomizations, ...patches].map((p) => producer.tree.toRepository(p) ?? p)),
    )
    if ([...ctx.changed].some((c) => influences.has(c))) return true
  }
  return false
}

/**
 * The repository files a configMapGenerator or secretGenerator named `name` reads (its
 * kustomization file, its `files`, `envs` and `env`): an edit of one changes the generated object
 * though none of them names it. Kustomization files are parsed, never matched (repository content).
 */
async function generatorFiles(commit: Commit, kind: 'ConfigMap' | 'Secret', name: string, parsed: Map<string, unknown>): Promise<string[]> {
  const field = kind === 'ConfigMap' ? 'configMapGenerator' : 'secretGenerator'
  const out: string[] = []
  for (const file of (await commit.grep(name)).filter(isKustomizationFile)) {
    const doc = kustomizationOf((await commit.snapshot.text(file)) ?? '', parsed)
    const generators = isRecord(doc) && Array.isArray(doc[field]) ? doc[field].filter(isRecord) : []
    const dir = posix.dirname(file)
    for (const g of generators.filter((g) => g.name === name)) out.push(file, ...generatorSources(g).map((f) => posix.normalize(posix.join(dir, f))))
  }
  return out
}

/** Whether any of `paths` (YAML files) mentions a text at any of the snapshots; each text asked once. */
export function mentionsIn(paths: readonly string[], snapshots: readonly (Snapshot | undefined)[]): (text: string) => Promise<boolean> {
  const yaml = paths.filter((p) => YAML_FILE.test(p))
  const texts = async (): Promise<string[]> => {
    const read = await Promise.all(snapshots.flatMap((s) => (s === undefined ? [] : yaml.map((p) => s.text(p)))))
    return read.filter((t): t is string => t !== undefined)
  }
  let all: Promise<string[]> | undefined
  const answers = new Map<string, Promise<boolean>>()
  return (text) => {
    let answer = answers.get(text)
    if (answer === undefined) {
      all ??= texts()
      answer = all.then((list) => list.some((t) => t.includes(text)))
      answers.set(text, answer)
    }
    return answer
  }
}
