// The tests' handle on the cluster the global setup started (global-setup.ts):
// typed clients and the helpers most integration and end-to-end tests need.
//
//   const cluster = useCluster()
//   const ns = await cluster.createNamespace('trigger')

import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node'
import { inject } from 'vitest'
import { publishChartOverHttp, type ChartSpec, type PublishedChart } from './chart.ts'
import {
  GIT_REPOSITORY,
  HELM_RELEASE,
  HELM_REPOSITORY,
  KUSTOMIZATION,
  OCI_REPOSITORY,
  REQUESTED_AT,
  describeConditions,
  gitRepository,
  gitRevision,
  helmRelease,
  helmRepository,
  isAppliedAt,
  isReady,
  kustomization,
  ociRepository,
  type FluxObject,
  type GitRepositoryOptions,
  type HelmReleaseOptions,
  type KustomizationOptions,
  type OciRepositoryOptions,
} from './flux.ts'
import { createGitRemote, type GitRemote } from './git-server.ts'
import type { ProvidedCluster } from './global-setup.ts'
import { pushChart, type PushedChart } from './oci-chart.ts'
import { createNamespace, kubeConfigFromFile, serviceAccountToken, waitFor, writeKubeconfig, type TokenOptions, type WaitOptions } from './kube.ts'

const FIELD_MANAGER = 'helmrelease-trigger-tests'

export interface ClusterHandle extends ProvidedCluster {
  /** Admin (system:masters) client configuration. */
  readonly kubeconfig: KubeConfig
  readonly core: CoreV1Api
  readonly custom: CustomObjectsApi
  /** Creates `<prefix>-<random>` and returns its name (namespaces never finish deleting here). */
  createNamespace(prefix?: string): Promise<string>
  serviceAccountToken(namespace: string, name: string, options?: TokenOptions): Promise<string>
  /** Writes a kubeconfig for another identity (a temp file removed at exit); returns its path. */
  kubeconfigFor(token: string, user?: string): Promise<string>
  publishChart(spec: ChartSpec): Promise<PublishedChart>
  waitFor: typeof waitFor
  /** Server-side applies a HelmRepository for the loopback chart repository (name `chartRepositoryName(namespace)`). */
  applyHelmRepository(namespace: string, options?: { name?: string; interval?: string }): Promise<FluxObject>
  /** Pushes a chart to the loopback OCI registry as `oci://<registry>/<name>:<version>`. */
  pushOciChart(spec: ChartSpec): Promise<PushedChart>
  /** Server-side applies an OCIRepository (plain HTTP, the chart layer copied as the artifact). */
  applyOciRepository(options: OciRepositoryOptions): Promise<FluxObject>
  /** Creates or replaces the ConfigMap `app-values` holding `values.yaml` (as kustomize-controller would apply it). */
  applyValues(namespace: string, values: string): Promise<void>
  /** Server-side applies a HelmRelease (defaults: chart `demo`, version `*`, the namespace's repository, interval 1h). */
  applyHelmRelease(options: HelmReleaseOptions): Promise<FluxObject>
  getHelmRelease(namespace: string, name: string): Promise<FluxObject>
  /** Merge-patches `reconcile.fluxcd.io/requestedAt`; returns the token written. */
  requestReconcile(namespace: string, name: string, token?: string): Promise<string>
  /** Waits for Ready=True at the current generation; the timeout error shows the conditions. */
  waitForHelmReleaseReady(namespace: string, name: string, options?: WaitOptions): Promise<FluxObject>
  /** A new repository on the loopback git server, with a working clone to push from (removed at exit). */
  createGitRemote(name?: string): Promise<GitRemote>
  /** Server-side applies a GitRepository (branch `main`, interval 1h). */
  applyGitRepository(options: GitRepositoryOptions): Promise<FluxObject>
  /** Server-side applies a Flux Kustomization (prune on, interval 1h, source = its own name). */
  applyKustomization(options: KustomizationOptions): Promise<FluxObject>
  getKustomization(namespace: string, name: string): Promise<FluxObject>
  /**
   * Asks source-controller to fetch the GitRepository now (as a push webhook would) and
   * waits until the Kustomization is Ready with the commit `sha` applied; the timeout
   * error shows both objects' conditions.
   */
  syncKustomization(namespace: string, name: string, sha: string, options?: WaitOptions & { source?: string }): Promise<FluxObject>
}

let handle: ClusterHandle | undefined

export function useCluster(): ClusterHandle {
  handle ??= clusterHandle(inject('cluster'))
  return handle
}

/** The same helpers over any cluster: the shared one, or one a test starts itself (startCluster). */
export function clusterHandle(provided: ProvidedCluster): ClusterHandle {
  const kubeconfig = kubeConfigFromFile(provided.kubeconfigPath)
  const core = kubeconfig.makeApiClient(CoreV1Api)
  const custom = kubeconfig.makeApiClient(CustomObjectsApi)
  let scratch: string | undefined

  async function apply(coordinates: { group: string; version: string; plural: string }, object: FluxObject): Promise<FluxObject> {
    const namespace = object.metadata.namespace
    if (!namespace) throw new Error(`${object.kind} ${object.metadata.name} has no namespace`)
    return (await custom.patchNamespacedCustomObject(
      { ...coordinates, namespace, name: object.metadata.name, body: object, fieldManager: FIELD_MANAGER, force: true },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )) as FluxObject
  }

  async function getHelmRelease(namespace: string, name: string): Promise<FluxObject> {
    return (await custom.getNamespacedCustomObject({ ...HELM_RELEASE, namespace, name })) as FluxObject
  }

  async function getKustomization(namespace: string, name: string): Promise<FluxObject> {
    return (await custom.getNamespacedCustomObject({ ...KUSTOMIZATION, namespace, name })) as FluxObject
  }

  async function annotateReconcile(
    coordinates: { group: string; version: string; plural: string },
    namespace: string,
    name: string,
    token: string,
  ): Promise<void> {
    await custom.patchNamespacedCustomObject(
      { ...coordinates, namespace, name, body: { metadata: { annotations: { [REQUESTED_AT]: token } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
  }

  const remotes: GitRemote[] = []

  return {
    ...provided,
    kubeconfig,
    core,
    custom,
    waitFor,
    async createNamespace(prefix = 'test') {
      const name = `${prefix.slice(0, 50)}-${randomBytes(4).toString('hex')}`
      await createNamespace(kubeconfig, name)
      return name
    },
    serviceAccountToken: (namespace, name, options) => serviceAccountToken(kubeconfig, namespace, name, options),
    async kubeconfigFor(token, user = 'user') {
      if (!scratch) {
        const dir = mkdtempSync(join(tmpdir(), 'hrt-kubeconfigs-'))
        process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
        scratch = dir
      }
      const path = join(scratch, `${user}-${randomBytes(4).toString('hex')}`)
      await writeKubeconfig(path, { server: provided.server, caData: provided.caData, token, user })
      return path
    },
    publishChart: (spec) => publishChartOverHttp(provided.chartRepoUrl, spec),
    applyHelmRepository: (namespace, options = {}) => apply(HELM_REPOSITORY, helmRepository({ namespace, url: provided.chartRepoUrl, ...options })),
    async pushOciChart(spec) {
      if (provided.ociRegistryUrl === undefined) throw new Error('this cluster has no OCI registry: start it with Flux')
      return pushChart(provided.ociRegistryUrl, spec)
    },
    applyOciRepository: (options) => apply(OCI_REPOSITORY, ociRepository(options)),
    async applyValues(namespace, values) {
      const body = { metadata: { name: 'app-values', namespace }, data: { 'values.yaml': `${values}\n` } }
      try {
        await core.replaceNamespacedConfigMap({ namespace, name: 'app-values', body })
      } catch {
        await core.createNamespacedConfigMap({ namespace, body })
      }
    },
    applyHelmRelease: (options) => apply(HELM_RELEASE, helmRelease(options)),
    getHelmRelease,
    async requestReconcile(namespace, name, token = new Date().toISOString()) {
      await annotateReconcile(HELM_RELEASE, namespace, name, token)
      return token
    },
    async waitForHelmReleaseReady(namespace, name, options = {}) {
      let last: FluxObject | undefined
      try {
        return await waitFor(
          async () => {
            last = await getHelmRelease(namespace, name)
            return isReady(last) && last
          },
          { timeoutMs: 120_000, ...options },
        )
      } catch (error) {
        throw new Error(`HelmRelease ${namespace}/${name} not Ready: ${describeConditions(last)}`, { cause: error })
      }
    },
    async createGitRemote(name) {
      const remote = await createGitRemote(provided.gitServerUrl, name)
      if (remotes.length === 0) process.once('exit', () => remotes.forEach((r) => r.cleanup()))
      remotes.push(remote)
      return remote
    },
    applyGitRepository: (options) => apply(GIT_REPOSITORY, gitRepository(options)),
    applyKustomization: (options) => apply(KUSTOMIZATION, kustomization(options)),
    getKustomization,
    async syncKustomization(namespace, name, sha, options = {}) {
      const source = options.source ?? name
      const revision = gitRevision(sha)
      await annotateReconcile(GIT_REPOSITORY, namespace, source, `${revision} ${Date.now()}`)
      let last: FluxObject | undefined
      try {
        return await waitFor(
          async () => {
            last = await getKustomization(namespace, name)
            return isAppliedAt(last, revision) && last
          },
          { timeoutMs: 120_000, ...options },
        )
      } catch (error) {
        const repository = (await custom.getNamespacedCustomObject({ ...GIT_REPOSITORY, namespace, name: source }).catch(() => undefined)) as
          FluxObject | undefined
        throw new Error(
          `Kustomization ${namespace}/${name} not Ready at ${revision} (applied: ${last?.status?.lastAppliedRevision ?? 'nothing'}): ${describeConditions(last)}; ` +
            `GitRepository ${source}: ${describeConditions(repository)}`,
          { cause: error },
        )
      }
    },
  }
}
