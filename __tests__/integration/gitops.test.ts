// The GitOps loop of the local cluster, with no product code in it: a commit pushed to
// the loopback git server (smart HTTP, the real `git http-backend`) is fetched by the
// real source-controller and applied by the real kustomize-controller, generated
// ConfigMaps and SOPS-encrypted Secrets included. The product's GitOps tests build on it.

import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse, stringify } from 'yaml'
import { useCluster } from '../../test/support/context.ts'
import { gitRevision } from '../../test/support/flux.ts'
import { ageKeySecret, encryptSecret, makeAgeKey, sopsTools } from '../../test/support/sops.ts'

const execFileAsync = promisify(execFile)
const cluster = useCluster()

const GENERATOR = stringify({
  apiVersion: 'kustomize.config.k8s.io/v1beta1',
  kind: 'Kustomization',
  configMapGenerator: [{ name: 'demo-values', files: ['values.yaml'], options: { disableNameSuffixHash: true, labels: { app: 'demo' } } }],
})

describe('loopback git server', () => {
  it('takes a push and serves the branch to a clone', async () => {
    const remote = await cluster.createGitRemote()
    const sha = await remote.push({ 'README.md': 'hello\n' }, 'First')

    const { stdout } = await execFileAsync('git', ['ls-remote', remote.url, 'refs/heads/main'])
    expect(stdout.trim()).toBe(`${sha}\trefs/heads/main`)
    const second = await remote.push({ 'README.md': 'hello again\n' }, 'Second')
    const after = await execFileAsync('git', ['ls-remote', remote.url, 'refs/heads/main'])
    expect(after.stdout.trim()).toBe(`${second}\trefs/heads/main`)
  })
})

describe('kustomize-controller in the local cluster', () => {
  it('applies a pushed configMapGenerator, then the commit that edits its values file', async () => {
    const namespace = await cluster.createNamespace('gitops')
    const remote = await cluster.createGitRemote()
    const first = await remote.push({ 'apps/demo/kustomization.yaml': GENERATOR, 'apps/demo/values.yaml': 'greeting: hello\nreplicas: 1\n' }, 'Add demo')

    await cluster.applyGitRepository({ namespace, name: 'repo', url: remote.url })
    await cluster.applyKustomization({ namespace, name: 'apps', source: 'repo', path: './apps/demo', targetNamespace: namespace })
    const applied = await cluster.syncKustomization(namespace, 'apps', first, { source: 'repo' })
    expect(applied.status?.lastAppliedRevision).toBe(gitRevision(first))

    const configMap = await cluster.core.readNamespacedConfigMap({ namespace, name: 'demo-values' })
    expect(configMap.data).toEqual({ 'values.yaml': 'greeting: hello\nreplicas: 1\n' })
    expect(configMap.metadata?.labels).toMatchObject({ app: 'demo', 'kustomize.toolkit.fluxcd.io/name': 'apps' })

    const second = await remote.push({ 'apps/demo/values.yaml': 'greeting: hello\nreplicas: 3\n' }, 'Three replicas')
    const reapplied = await cluster.syncKustomization(namespace, 'apps', second, { source: 'repo' })
    expect(reapplied.status?.lastAppliedRevision).toBe(gitRevision(second))
    const updated = await cluster.core.readNamespacedConfigMap({ namespace, name: 'demo-values' })
    expect(parse(updated.data?.['values.yaml'] ?? '')).toEqual({ greeting: 'hello', replicas: 3 })
  })
})

describe('SOPS decryption by kustomize-controller', () => {
  // A cold build of sops and age-keygen takes minutes; a cached one is instant.
  beforeAll(() => sopsTools().then(() => undefined), 45 * 60_000)

  it('applies a Secret encrypted with an age key made here, decrypted, at each new revision', async () => {
    const namespace = await cluster.createNamespace('sops')
    const key = await makeAgeKey()
    await cluster.core.createNamespacedSecret({ namespace, body: ageKeySecret(namespace, 'sops-age', key) })
    const secret = (token: string): Record<string, unknown> => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'demo-token' },
      type: 'Opaque',
      stringData: { token },
    })

    const encrypted = await encryptSecret(secret('first-token'), key.recipient)
    expect(encrypted).not.toContain('first-token')
    expect(parse(encrypted).sops.age[0].recipient).toBe(key.recipient)
    const remote = await cluster.createGitRemote()
    const first = await remote.push(
      {
        'secrets/kustomization.yaml': stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: ['token.yaml'] }),
        'secrets/token.yaml': encrypted,
      },
      'Add the token',
    )
    await cluster.applyGitRepository({ namespace, name: 'secrets', url: remote.url })
    await cluster.applyKustomization({ namespace, name: 'secrets', path: './secrets', targetNamespace: namespace, decryptionSecret: 'sops-age' })
    await cluster.syncKustomization(namespace, 'secrets', first)
    expect(await tokenOf(namespace)).toBe('first-token')

    const second = await remote.push({ 'secrets/token.yaml': await encryptSecret(secret('second-token'), key.recipient) }, 'Rotate the token')
    await cluster.syncKustomization(namespace, 'secrets', second)
    expect(await tokenOf(namespace)).toBe('second-token')
  })
})

async function tokenOf(namespace: string): Promise<string> {
  const secret = await cluster.core.readNamespacedSecret({ namespace, name: 'demo-token' })
  return Buffer.from(secret.data?.token ?? '', 'base64').toString('utf8')
}
