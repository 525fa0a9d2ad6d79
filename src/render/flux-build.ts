// One Flux Kustomization built as kustomize-controller builds it, in the sandbox: the files of
// its closure in memory, Flux's generated kustomization.yaml and kustomize (the build), then
// postBuild substitution and commonMetadata (the post-build), each object traced back to the
// file and line a user edits. A build never throws for repository content: a failure is one
// problem, a remote reference is "not rendered", an object Flux would refuse is one problem.

import { posix } from 'node:path'
import { namespaceProblem, objectNameProblem } from '../core/keys.ts'
import type { Provenance, RenderedObject, RenderProblem } from '../core/rendered.ts'
import { quoted } from '../lib/untrusted.ts'
import type { AppliedObject } from '../sandbox/protocol.ts'
import { filesIn, type Closure } from './closure.ts'
import { problemOf, type Commit } from './commit.ts'
import { fluxKustomization, isRecord, type FluxKustomization } from './flux-objects.ts'
import { dataKeyOrigins, documentLine, generatorProvenance, parseOrigin, specOrigins } from './provenance.ts'
import type { Build, BuildOutput, RenderContext } from './render-context.ts'
import type { SourceTree } from './source-tree.ts'
import { substitutionInputs } from './substitution.ts'

/** Longest error of the renderer passed on (it quotes the repository; quoted() bounds what it quotes of it). */
const ERROR_LIMIT = 600

export async function buildKustomization(
  commit: Commit,
  k: FluxKustomization,
  tree: SourceTree,
  closure: Closure,
  earlier: readonly RenderedObject[],
  ctx: RenderContext,
  touched: boolean,
): Promise<Build> {
  const nothing = { objects: [], problems: [], notRendered: [], children: [] }
  const shown = k.path === '' ? './' : `./${k.path}`
  const refused = commit.artifactProblems(k, ctx.identity)
  if (!tree.view.isDirectory(k.path))
    return { ...nothing, problems: [problemOf(k, `Flux Kustomization ${k.id}: spec.path ${shown} does not exist in the source; fix spec.path.`)] }
  const built = await kustomizeOutput(commit, k, tree, closure, ctx, touched)
  const artifactProblems = refused.map((message) => problemOf(k, message))
  if ('problem' in built) return { ...nothing, problems: [...artifactProblems, problemOf(k, built.problem(k.id), built.where)] }
  if ('remote' in built) {
    const notRendered = [{ kustomization: k.id, reason: `it needs the remote reference ${quoted(built.remote)}, which is never fetched while planning` }]
    // Its own objects are not known; the Kustomizations it defines locally still are.
    if (built.partial === undefined) return { ...nothing, problems: artifactProblems, notRendered }
    const partial = await renderedObjects(commit, k, tree, closure, built.partial, earlier, ctx)
    return { objects: [], problems: artifactProblems, notRendered, children: partial.children }
  }
  const rendered = await renderedObjects(commit, k, tree, closure, built.output, earlier, ctx)
  return { ...rendered, problems: [...artifactProblems, ...rendered.problems] }
}

/**
 * kustomize's output for `k` at this commit, built once: a build the range did not touch is the
 * same at both commits and shared between them; with a cache, Kustomizations of other calls
 * (other cluster roots) that build the same share it too.
 */
export function kustomizeOutput(
  commit: Commit,
  k: FluxKustomization,
  tree: SourceTree,
  closure: Closure,
  ctx: RenderContext,
  touched: boolean,
): Promise<BuildOutput> {
  const key = `${touched ? commit.snapshot.sha : ''}\0${buildKey(k)}`
  let output = ctx.outputs.get(key)
  if (output === undefined) {
    output = ctx.limit(() => sandboxBuild(k, tree, closure, ctx))
    output.catch(() => {})
    ctx.outputs.set(key, output)
  }
  return output
}

/**
 * What kustomize's output for `k` depends on beyond the commit: its source, its path and the
 * fields Flux writes into the kustomization.yaml. Not its name, nor postBuild: clusters sharing
 * a path share the build, and each substitutes its own variables.
 */
function buildKey(k: FluxKustomization): string {
  const { targetNamespace, namePrefix, nameSuffix, patches, patchesStrategicMerge, patchesJson6902, components, ignoreMissingComponents, images } = k.spec
  const layer = JSON.stringify({
    targetNamespace,
    namePrefix,
    nameSuffix,
    patches,
    patchesStrategicMerge,
    patchesJson6902,
    components,
    ignoreMissingComponents,
    images,
  })
  return [`${k.sourceRef.kind}/${k.sourceRef.namespace}/${k.sourceRef.name}`, k.path, layer].join('\0')
}

/** The Flux Kustomization as the sandbox takes it. */
function fluxObject(k: FluxKustomization): Record<string, unknown> {
  return { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', metadata: { name: k.name, namespace: k.namespace }, spec: k.spec }
}

/** The closure's files, in memory, built in the sandbox. */
async function sandboxBuild(k: FluxKustomization, tree: SourceTree, closure: Closure, ctx: RenderContext): Promise<BuildOutput> {
  const shown = k.path === '' ? './' : `./${k.path}`
  const paths = filesIn(tree.view, closure)
  await tree.view.prefetch(paths)
  const files = (await Promise.all(paths.map(async (path) => [path, await tree.view.bytes(path)] as const))).flatMap(([path, bytes]) =>
    bytes === undefined ? [] : [[path, bytes] as const],
  )
  const answer = await ctx.options.sandbox.build({ path: k.path, kustomization: fluxObject(k) }, files)
  if (answer.yaml !== undefined) return { output: answer.yaml }
  if (answer.remote !== undefined) return { remote: answer.remote, partial: answer.partial }
  const message = bounded(answer.error ?? 'the renderer gave no reason')
  return { problem: (id) => `Flux Kustomization ${id} (path ${shown}) does not build: ${message}` }
}

/** The renderer's error, one line, bounded; it names files by their path in the source. */
export function bounded(text: string): string {
  const oneLine = text
    // eslint-disable-next-line no-control-regex -- control characters are what we remove
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return oneLine.length > ERROR_LIMIT ? `${oneLine.slice(0, ERROR_LIMIT)}…` : oneLine
}

/** The post-build of `output` (Flux's substitution and commonMetadata), each object with where it was written. */
async function renderedObjects(
  commit: Commit,
  k: FluxKustomization,
  tree: SourceTree,
  closure: Closure,
  output: string,
  earlier: readonly RenderedObject[],
  ctx: RenderContext,
): Promise<Build> {
  const objects: RenderedObject[] = []
  const problems: RenderProblem[] = []
  const children: Build['children'][number][] = []
  const inputs = await substitutionInputs(commit, k, earlier, ctx)
  if (inputs.problem) problems.push(problemOf(k, inputs.problem))
  const answer = await ctx.options.sandbox.postBuild({ yaml: output, kustomization: fluxObject(k), values: inputs.values, absent: inputs.absent })
  if (answer.error !== undefined || answer.objects === undefined) {
    problems.push(problemOf(k, `Flux Kustomization ${k.id}: post-build failed: ${bounded(answer.error ?? 'the renderer gave no reason')}`))
    return { objects, problems, notRendered: [], children }
  }
  const unresolved = new Set<string>()
  let firstUnresolved: Provenance | undefined
  for (const applied of answer.objects) {
    const traced = await trace(commit, k, tree, closure, applied)
    for (const v of applied.unresolved ?? []) unresolved.add(v)
    if ((applied.unresolved ?? []).length > 0) firstUnresolved ??= traced.provenance
    const object = applied.object
    if (applied.error !== undefined || object === undefined) {
      problems.push(problemOf(k, `${applied.kind ?? 'an object'}/${quoted(applied.name ?? '')}: ${bounded(applied.error ?? 'refused')}.`, traced.provenance))
      continue
    }
    const meta = isRecord(object.metadata) ? object.metadata : {}
    const kind = typeof object.kind === 'string' ? object.kind : ''
    const name = typeof meta.name === 'string' ? meta.name : ''
    const namespace = typeof meta.namespace === 'string' ? meta.namespace : undefined
    const nameIssue = objectNameProblem(kind, name)
    const namespaceIssue = namespace === undefined ? undefined : namespaceProblem(namespace)
    const invalid = nameIssue !== undefined ? `${kind} ${nameIssue}` : namespaceIssue !== undefined ? `${kind} ${name}: ${namespaceIssue}` : undefined
    if (invalid !== undefined) {
      problems.push(problemOf(k, `${invalid}; Kubernetes refuses it, so Flux applies nothing of this Kustomization.`, traced.provenance))
      continue
    }
    const rendered: RenderedObject = {
      apiVersion: typeof object.apiVersion === 'string' ? object.apiVersion : '',
      kind,
      namespace,
      name,
      object,
      origin: traced.provenance,
      keyOrigins: traced.keyOrigins,
      ...(traced.fields === undefined ? {} : { specOrigins: traced.fields }),
      kustomization: k.id,
    }
    objects.push(rendered)
    const child = fluxKustomization(object)
    if (child) children.push({ k: traced.provenance === undefined ? child : { ...child, definedAt: traced.provenance }, origin: traced.provenance })
  }
  if (unresolved.size > 0) {
    const names = [...unresolved]
      .slice(0, 10)
      .map((n) => quoted(n))
      .join(', ')
    const more = unresolved.size > 10 ? ` and ${unresolved.size - 10} more` : ''
    problems.push(
      problemOf(
        k,
        `postBuild substitution: no value for ${names}${more} in spec.postBuild.substitute or the substituteFrom objects found (add the values, a \${var:=default}, or connect to the cluster).`,
        firstUnresolved,
      ),
    )
  }
  return { objects, problems, notRendered: [], children, ...(inputs.absent.length > 0 ? { absent: inputs.absent } : {}) }
}

/** Where an object was written: its document, or its generator entry and each key's line. */
async function trace(
  commit: Commit,
  k: FluxKustomization,
  tree: SourceTree,
  closure: Closure,
  applied: AppliedObject,
): Promise<{ provenance: Provenance | undefined; keyOrigins: Record<string, Provenance>; fields: Record<string, Provenance> | undefined }> {
  const origin = parseOrigin(applied.origin)
  const kind = applied.kind ?? ''
  const name = applied.name ?? ''
  const files = commit.filesOf(tree)
  const toRepository = (p: Provenance): Provenance | undefined => {
    const file = tree.toRepository(p.file)
    return file === undefined ? undefined : { file, line: p.line }
  }
  const inRepository = (found: Record<string, Provenance>): Record<string, Provenance> =>
    Object.fromEntries(Object.entries(found).flatMap(([key, p]) => (toRepository(p) ? [[key, toRepository(p) as Provenance]] : [])))
  if (origin?.kind === 'file') {
    const path = posix.normalize(posix.join(k.path, origin.path))
    const file = tree.toRepository(path)
    if (file === undefined) return { provenance: undefined, keyOrigins: {}, fields: undefined }
    const provenance = { file, line: await documentLine(files, path, kind, name) }
    if (kind === 'ConfigMap' || kind === 'Secret') {
      return { provenance, keyOrigins: inRepository(await dataKeyOrigins(files, path, kind, writtenName(name, k))), fields: undefined }
    }
    // A spec change points at the field edited; the source document's name is before any prefix or suffix.
    if (kind !== 'HelmRelease' && kind !== 'OCIRepository' && kind !== 'HelmChart') return { provenance, keyOrigins: {}, fields: undefined }
    return { provenance, keyOrigins: {}, fields: inRepository(await specOrigins(files, closure, path, kind, writtenName(name, k))) }
  }
  if (origin?.kind === 'generator' && (kind === 'ConfigMap' || kind === 'Secret')) {
    const found = await generatorProvenance(files, closure, posix.normalize(posix.join(k.path, origin.configuredIn)), kind, name)
    if (found === undefined) return { provenance: undefined, keyOrigins: {}, fields: undefined }
    return { provenance: toRepository(found.origin), keyOrigins: inRepository(found.keys), fields: undefined }
  }
  return { provenance: undefined, keyOrigins: {}, fields: undefined }
}

/** An object's name as written, before the Flux Kustomization's namePrefix/nameSuffix. */
function writtenName(name: string, k: FluxKustomization): string {
  const prefix = typeof k.spec.namePrefix === 'string' ? k.spec.namePrefix : ''
  const suffix = typeof k.spec.nameSuffix === 'string' ? k.spec.nameSuffix : ''
  const bare = name.startsWith(prefix) ? name.slice(prefix.length) : name
  return suffix !== '' && bare.endsWith(suffix) ? bare.slice(0, -suffix.length) : bare
}
