// What kustomize-controller adds around kustomize: the kustomization.yaml it generates when a
// path has none (every YAML file under it, nested kustomization directories as a whole), the
// Flux Kustomization's own fields written into that file (targetNamespace, namePrefix/Suffix,
// patches, images, components), and after the build, commonMetadata and postBuild substitution.
// We also ask kustomize for origin annotations (provenance), and strip them from the output.

import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { isMap, isSeq, parseDocument, type Document } from 'yaml'
import { KUSTOMIZATION_FILES } from './closure.ts'
import { isRecord, type FluxKustomization } from './flux-objects.ts'

/** source-controller leaves these out of a GitRepository's artifact by default. */
const IGNORED_DIRECTORIES = new Set(['.git', '.github', '.circleci'])
const IGNORED_FILES = new Set([
  '.gitlab-ci.yml',
  '.travis.yml',
  'appveyor.yml',
  '.drone.yml',
  'cloudbuild.yaml',
  'codeship-services.yml',
  'codeship-steps.yml',
  '.goreleaser.yml',
  '.sops.yaml',
  '.flux.yaml',
])

/** The resources Flux lists when `dir` has no kustomization file: `./a.yaml`, `./sub/b.yml`, `./nested`. */
export async function generatedResources(dir: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (rel: string): Promise<void> => {
    // Go's filepath.Walk visits entries in lexical order.
    const entries = (await readdir(join(dir, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`
      if (entry.isDirectory()) {
        if (IGNORED_DIRECTORIES.has(entry.name)) continue
        const names = new Set(await readdir(join(dir, path)))
        if (KUSTOMIZATION_FILES.some((k) => names.has(k))) out.push(`./${path}`)
        else await walk(path)
      } else if (entry.isFile() && /\.ya?ml$/.test(entry.name) && !IGNORED_FILES.has(entry.name)) {
        out.push(`./${path}`)
      }
    }
  }
  await walk('')
  return out
}

/**
 * The kustomization.yaml kustomize-controller builds for `k`: the user's file (or a generated
 * listing) with Flux's fields and `buildMetadata: [originAnnotations]` added. Pure.
 */
export function fluxKustomizationText(existing: string | undefined, generated: readonly string[], k: FluxKustomization): string {
  const doc: Document = existing === undefined ? parseDocument('{}') : parseDocument(existing)
  if (!isMap(doc.contents)) doc.contents = doc.createNode({}) as typeof doc.contents
  if (existing === undefined) {
    doc.set('apiVersion', 'kustomize.config.k8s.io/v1beta1')
    doc.set('kind', 'Kustomization')
    doc.set('resources', [...generated])
  }
  const spec = k.spec
  if (typeof spec.targetNamespace === 'string' && spec.targetNamespace !== '') doc.set('namespace', spec.targetNamespace)
  if (typeof spec.namePrefix === 'string' && spec.namePrefix !== '') doc.set('namePrefix', spec.namePrefix)
  if (typeof spec.nameSuffix === 'string' && spec.nameSuffix !== '') doc.set('nameSuffix', spec.nameSuffix)
  const append = (field: string, items: unknown[]): void => {
    if (items.length === 0) return
    const current = doc.get(field, true)
    if (isSeq(current)) for (const item of items) current.add(doc.createNode(item))
    else doc.set(field, items)
  }
  if (Array.isArray(spec.patches)) {
    append(
      'patches',
      spec.patches.filter(isRecord).map((p) => ({ patch: p.patch, ...(isRecord(p.target) ? { target: p.target } : {}) })),
    )
  }
  if (Array.isArray(spec.components))
    append(
      'components',
      spec.components.filter((c) => typeof c === 'string'),
    )
  if (Array.isArray(spec.images)) {
    const images = (doc.toJS() as { images?: unknown }).images
    const current = Array.isArray(images) ? images.filter(isRecord) : []
    for (const image of spec.images.filter(isRecord)) {
      const entry = {
        name: image.name,
        ...(image.newName ? { newName: image.newName } : {}),
        ...(image.newTag ? { newTag: image.newTag } : {}),
        ...(image.digest ? { digest: image.digest } : {}),
      }
      const at = current.findIndex((c) => c.name === image.name)
      if (at >= 0) current[at] = entry
      else current.push(entry)
    }
    if (current.length > 0) doc.set('images', current)
  }
  const metadata = doc.get('buildMetadata', true)
  if (isSeq(metadata)) {
    if (!metadata.items.some((i) => String((i as { value?: unknown }).value ?? i) === 'originAnnotations')) metadata.add('originAnnotations')
  } else {
    doc.set('buildMetadata', ['originAnnotations'])
  }
  return doc.toString({ lineWidth: 0 })
}

/** Splits kustomize's output into documents (it prints `---` between them). */
export function outputDocuments(output: string): string[] {
  return output
    .split(/^---[ \t]*$/m)
    .map((d) => d.trim())
    .filter((d) => d !== '')
}

/** Sets commonMetadata's labels and annotations on an object; Flux's win over the object's own. */
export function withCommonMetadata(object: Record<string, unknown>, spec: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const common = isRecord(spec.commonMetadata) ? spec.commonMetadata : undefined
  if (common === undefined) return object
  const meta = isRecord(object.metadata) ? { ...object.metadata } : {}
  for (const field of ['labels', 'annotations'] as const) {
    const add = isRecord(common[field]) ? common[field] : undefined
    if (add === undefined) continue
    meta[field] = { ...(isRecord(meta[field]) ? meta[field] : {}), ...add }
  }
  return { ...object, metadata: meta }
}
