// A generated corpus of Flux repository layouts for the differential rendering tests: every
// kustomize generator form, behaviors, options, hash suffix on and off, name references,
// namespaces, prefixes and suffixes, components, patches, overlays, CRLF and non-ASCII content,
// and Flux's layer on top (targetNamespace, Flux patches, postBuild substitution, paths without
// a kustomization.yaml), applied through a chain of nested Flux Kustomizations.

import { bootstrapText, repositoryKustomization } from './flux.ts'

export const CORPUS_URL = 'https://github.com/acme/corpus'
export const CLUSTER_ROOT = 'clusters/test'
/** The postBuild.substitute every substituting layout gets. */
export const CLUSTER_VALUE = 'test-cluster'

export type GeneratorForm = 'files' | 'files-key' | 'literals' | 'envs' | 'all'
export type OverlayKind = 'none' | 'merge' | 'replace' | 'create'
export type Content = 'ascii' | 'crlf' | 'non-ascii'

export interface Layout {
  readonly index: number
  readonly app: string
  /** Repository path Flux builds (spec.path). */
  readonly path: string
  readonly plain: boolean
  readonly kind: 'ConfigMap' | 'Secret'
  readonly form: GeneratorForm
  readonly overlay: OverlayKind
  readonly disableHash: boolean
  readonly options: boolean
  readonly namespace: string | undefined
  readonly affixes: boolean
  readonly component: boolean
  readonly patch: 'none' | 'strategic' | 'json6902'
  readonly nameReference: boolean
  readonly content: Content
  readonly targetNamespace: string | undefined
  readonly substitution: boolean
  readonly fluxPatch: boolean
}

const FORMS: readonly GeneratorForm[] = ['files', 'files-key', 'literals', 'envs', 'all']
const OVERLAYS: readonly OverlayKind[] = ['none', 'merge', 'replace', 'create']
const CONTENTS: readonly Content[] = ['ascii', 'crlf', 'non-ascii']

/** `count` kustomize layouts plus four plain directories; every value of every dimension occurs. */
export function corpusLayouts(count = 36): Layout[] {
  const layouts: Layout[] = []
  for (let i = 0; i < count; i++) {
    const overlay = OVERLAYS[Math.floor(i / 2) % OVERLAYS.length] ?? 'none'
    const app = `app-${i}`
    layouts.push({
      index: i,
      app,
      path: overlay === 'none' ? `apps/${app}/base` : `apps/${app}/overlay`,
      plain: false,
      kind: i % 2 === 0 ? 'ConfigMap' : 'Secret',
      form: FORMS[i % FORMS.length] ?? 'files',
      overlay,
      disableHash: i % 3 === 0,
      options: i % 4 === 1,
      namespace: i % 3 === 1 ? `ns-${i}` : undefined,
      affixes: i % 5 === 2,
      component: i % 6 === 3,
      patch: (['none', 'strategic', 'json6902'] as const)[i % 3] ?? 'none',
      nameReference: i % 2 === 0 || i % 7 === 1,
      content: CONTENTS[Math.floor(i / 3) % CONTENTS.length] ?? 'ascii',
      targetNamespace: i % 4 === 2 ? `target-${i}` : undefined,
      substitution: i % 5 === 0 || i % 5 === 3,
      fluxPatch: i % 7 === 4,
    })
  }
  for (let j = 0; j < 4; j++) {
    const i = count + j
    layouts.push({
      index: i,
      app: `plain-${j}`,
      path: `plain/plain-${j}`,
      plain: true,
      kind: j % 2 === 0 ? 'ConfigMap' : 'Secret',
      form: 'files',
      overlay: 'none',
      disableHash: true,
      options: false,
      namespace: undefined,
      affixes: false,
      component: false,
      patch: 'none',
      nameReference: false,
      content: CONTENTS[j % CONTENTS.length] ?? 'ascii',
      targetNamespace: j % 2 === 1 ? `target-plain-${j}` : undefined,
      substitution: j >= 2,
      fluxPatch: false,
    })
  }
  return layouts
}

function lines(content: Content, ...rows: string[]): string {
  return rows.join(content === 'crlf' ? '\r\n' : '\n') + (content === 'crlf' ? '\r\n' : '\n')
}

function greeting(content: Content): string {
  return content === 'non-ascii' ? 'grüße, 世界 🚀' : 'hello'
}

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64')

/** The files of one layout, repository path → text. */
export function layoutFiles(l: Layout): Record<string, string> {
  const files: Record<string, string> = {}
  const generatorName = `values-${l.index}`
  const release = (namespace: string | undefined): string =>
    [
      'apiVersion: helm.toolkit.fluxcd.io/v2',
      'kind: HelmRelease',
      'metadata:',
      `  name: ${l.app}`,
      ...(namespace ? [`  namespace: ${namespace}`] : []),
      'spec:',
      '  interval: 10m',
      '  chart:',
      '    spec:',
      '      chart: podinfo',
      '      version: "1.0.0"',
      '      sourceRef: {kind: HelmRepository, name: podinfo}',
      '  values:',
      `    greeting: "${l.substitution ? 'from ${cluster}' : 'static'}"`,
      '  valuesFrom:',
      `    - kind: ${l.kind}`,
      `      name: ${generatorName}`,
      '',
    ].join('\n')
  if (l.plain) {
    const dir = l.path
    const valuesText = lines(l.content, `replicaCount: ${l.index}`, `cluster: ${l.substitution ? '${cluster}' : 'none'}`, `greeting: ${greeting(l.content)}`)
    const source =
      l.kind === 'ConfigMap'
        ? [
            'apiVersion: v1',
            'kind: ConfigMap',
            'metadata:',
            `  name: ${generatorName}`,
            'data:',
            '  values.yaml: |',
            ...valuesText
              .trimEnd()
              .split(/\r?\n/)
              .map((r) => `    ${r}`),
            '',
          ]
        : ['apiVersion: v1', 'kind: Secret', 'metadata:', `  name: ${generatorName}`, 'type: Opaque', 'data:', `  values.yaml: ${base64(valuesText)}`, '']
    files[`${dir}/source.yaml`] = source.join('\n')
    files[`${dir}/nested/release.yaml`] = release(undefined)
    // A directory with its own kustomization.yaml is listed whole by Flux's generated file.
    files[`${dir}/bundled/kustomization.yaml`] = 'resources: [extra.yaml]\n'
    files[`${dir}/bundled/extra.yaml`] = ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', `  name: bundled-${l.index}`, 'data:', '  key: value', ''].join(
      '\n',
    )
    files[`${dir}/README.md`] = 'not a manifest\n'
    return files
  }
  const baseDir = `apps/${l.app}/base`
  const generator = l.kind === 'ConfigMap' ? 'configMapGenerator' : 'secretGenerator'
  files[`${baseDir}/values.yaml`] = lines(
    l.content,
    `replicaCount: ${l.index}`,
    `cluster: ${l.substitution ? '${cluster}' : 'none'}`,
    `greeting: ${greeting(l.content)}`,
    `fallback: \${missing:=fallback}`,
  )
  files[`${baseDir}/other.yaml`] = lines(l.content, `other: ${greeting(l.content)}`)
  files[`${baseDir}/app.env`] = lines(l.content, '# a comment', 'tier=gold', `zone=${l.substitution ? '${cluster}' : 'none'}-a`, `motto=${greeting(l.content)}`)
  const entry: string[] = [`  - name: ${generatorName}`]
  const add = (field: string, ...values: string[]): void => {
    entry.push(`    ${field}:`, ...values.map((v) => `      - ${v}`))
  }
  if (l.form === 'files' || l.form === 'all') add('files', 'values.yaml')
  if (l.form === 'files-key') add('files', 'values.yaml=other.yaml', 'extra.yaml=values.yaml')
  if (l.form === 'literals' || l.form === 'all')
    add('literals', 'replicas=2', `"motd=${greeting(l.content)}"`, l.substitution ? '"region=${cluster}"' : 'region=none')
  if (l.form === 'envs' || l.form === 'all') add('envs', 'app.env')
  if (l.kind === 'Secret') entry.push('    type: Opaque')
  const kustomization: string[] = ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization']
  if (l.namespace) kustomization.push(`namespace: ${l.namespace}`)
  if (l.affixes) kustomization.push('namePrefix: pre-', 'nameSuffix: -suf')
  kustomization.push('resources:', '  - release.yaml', `${generator}:`, ...entry)
  if (l.disableHash || l.options) {
    kustomization.push('generatorOptions:')
    if (l.disableHash) kustomization.push('  disableNameSuffixHash: true')
    if (l.options) kustomization.push('  labels:', '    team: platform', '  annotations:', '    note: "generated"')
  }
  if (l.nameReference) {
    kustomization.push('configurations:', '  - kustomizeconfig.yaml')
    files[`${baseDir}/kustomizeconfig.yaml`] = [
      'nameReference:',
      `  - kind: ${l.kind}`,
      '    version: v1',
      '    fieldSpecs:',
      '      - path: spec/valuesFrom/name',
      '        kind: HelmRelease',
      '',
    ].join('\n')
  }
  if (l.patch === 'strategic') {
    kustomization.push('patches:', '  - path: replicas-patch.yaml')
    files[`${baseDir}/replicas-patch.yaml`] = [
      'apiVersion: helm.toolkit.fluxcd.io/v2',
      'kind: HelmRelease',
      'metadata:',
      `  name: ${l.app}`,
      'spec:',
      '  values:',
      '    replicaCount: 3',
      '',
    ].join('\n')
  }
  if (l.patch === 'json6902') {
    kustomization.push(
      'patches:',
      '  - target: {kind: HelmRelease}',
      '    patch: |-',
      '      - op: replace',
      '        path: /spec/chart/spec/version',
      '        value: "2.0.0"',
    )
  }
  if (l.component) {
    kustomization.push('components:', `  - ../../../components/extra-${l.index}`)
    files[`components/extra-${l.index}/kustomization.yaml`] = [
      'apiVersion: kustomize.config.k8s.io/v1alpha1',
      'kind: Component',
      `${generator}:`,
      `  - name: ${generatorName}`,
      '    behavior: merge',
      '    literals:',
      '      - fromComponent=yes',
      '',
    ].join('\n')
  }
  files[`${baseDir}/kustomization.yaml`] = kustomization.join('\n') + '\n'
  files[`${baseDir}/release.yaml`] = release(undefined)
  if (l.overlay !== 'none') {
    const dir = `apps/${l.app}/overlay`
    const overlay = ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', '  - ../base', `${generator}:`]
    if (l.overlay === 'merge')
      overlay.push(`  - name: ${generatorName}`, '    behavior: merge', '    literals:', '      - tier=platinum', '      - overlay=yes')
    if (l.overlay === 'replace') {
      overlay.push(`  - name: ${generatorName}`, '    behavior: replace', '    files:', '      - values.yaml=overlay-values.yaml')
      files[`${dir}/overlay-values.yaml`] = lines(l.content, 'replicaCount: 99', `greeting: ${greeting(l.content)}`)
    }
    if (l.overlay === 'create') overlay.push(`  - name: overlay-extra-${l.index}`, '    literals:', '      - created=yes')
    if (l.overlay !== 'create' && l.kind === 'Secret') overlay.push('    type: Opaque')
    if (l.overlay === 'create' && l.kind === 'Secret') overlay.push('    type: Opaque')
    files[`${dir}/kustomization.yaml`] = overlay.join('\n') + '\n'
  }
  return files
}

/** The Flux Kustomization applying a layout. */
export function fluxKustomizationFor(l: Layout): string {
  const patch = ['- op: replace', '  path: /spec/interval', '  value: 5m'].join('\n')
  return repositoryKustomization(l.app, `./${l.path}`, {
    ...(l.targetNamespace ? { targetNamespace: l.targetNamespace } : {}),
    ...(l.substitution ? { postBuild: { substitute: { cluster: CLUSTER_VALUE } } } : {}),
    ...(l.fluxPatch ? { patches: [{ target: { kind: 'HelmRelease' }, patch }] } : {}),
  })
}

/**
 * The whole repository: a bootstrap Kustomization at the cluster root (no kustomization.yaml
 * there, so Flux generates one), the first half of the apps' Kustomizations beside it, the rest
 * one and two levels further down the chain (infra → deeper).
 */
export function corpusRepository(layouts: readonly Layout[]): Record<string, string> {
  const files: Record<string, string> = {}
  files[`${CLUSTER_ROOT}/flux-system/gotk-sync.yaml`] = bootstrapText(CORPUS_URL, `./${CLUSTER_ROOT}`)
  files[`${CLUSTER_ROOT}/flux-system/kustomization.yaml`] = 'resources: [gotk-sync.yaml]\n'
  const chained = (name: string, path: string): string => repositoryKustomization(name, `./${path}`)
  files[`${CLUSTER_ROOT}/infra.yaml`] = chained('infra', 'clusters/test-infra')
  files['clusters/test-infra/deeper.yaml'] = chained('deeper', 'clusters/test-deeper')
  const half = Math.floor(layouts.length / 2)
  const infra: string[] = ['deeper.yaml']
  layouts.forEach((l, n) => {
    Object.assign(files, layoutFiles(l))
    const text = fluxKustomizationFor(l)
    if (n < half) files[`${CLUSTER_ROOT}/apps/${l.app}.yaml`] = text
    else if (n < layouts.length - 3) {
      files[`clusters/test-infra/${l.app}.yaml`] = text
      infra.push(`${l.app}.yaml`)
    } else files[`clusters/test-deeper/${l.app}.yaml`] = text
  })
  files['clusters/test-infra/kustomization.yaml'] = `resources:\n${infra.map((f) => `  - ${f}`).join('\n')}\n`
  return files
}
