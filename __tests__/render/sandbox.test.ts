// The sandboxed renderer itself (src/sandbox/ and renderer/, the real WebAssembly module): Flux's
// own kustomize semantics through the protocol, and what a hostile tree cannot make it do — read
// a file outside the tree, reach the network, outlive its deadline or its memory.

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AppliedObject, BuildAnswer, SourceFiles, ValuesObject } from '../../src/sandbox/protocol.ts'
import { createSandbox } from '../../src/sandbox/sandbox.ts'

const sandbox = createSandbox()
afterAll(() => sandbox.close())

const encoder = new TextEncoder()
const tree = (files: Record<string, string>): SourceFiles => Object.entries(files).map(([path, text]) => [path, encoder.encode(text)] as const)

function flux(spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', metadata: { name: 'apps', namespace: 'flux-system' }, spec }
}

const configMap = (name: string, data: Record<string, string>): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: ${JSON.stringify(data)}\n`

/** Build then post-build, as the renderer does; the applied objects. */
async function applied(
  files: Record<string, string>,
  spec: Record<string, unknown>,
  extra: Partial<Parameters<typeof sandbox.postBuild>[0]> = {},
): Promise<AppliedObject[]> {
  const path = typeof spec.path === 'string' ? spec.path.replace(/^\.\//, '') : ''
  const built = await sandbox.build({ path, kustomization: flux(spec) }, tree(files))
  expect(built.error).toBeUndefined()
  const post = await sandbox.postBuild({ yaml: built.yaml ?? '', kustomization: flux(spec), ...extra })
  expect(post.error).toBeUndefined()
  return [...(post.objects ?? [])]
}

const dataOf = (objects: AppliedObject[], name: string): unknown => objects.find((o) => o.name === name)?.object?.data

describe("Flux's kustomize layer, by Flux's own code", () => {
  it('generates a kustomization.yaml for a plain directory: every YAML file, a nested kustomization directory whole', async () => {
    const objects = await applied(
      {
        'apps/a.yaml': configMap('a', { k: 'v' }),
        'apps/sub/b.yml': configMap('b', { k: 'v' }),
        'apps/nested/kustomization.yaml': 'resources: [c.yaml]\nnamePrefix: n-\n',
        'apps/nested/c.yaml': configMap('c', { k: 'v' }),
        'apps/notes.txt': 'not a manifest',
      },
      { path: './apps' },
    )
    expect(objects.map((o) => o.object?.metadata)).toEqual([{ name: 'a' }, { name: 'n-c' }, { name: 'b' }])
    expect(objects.map((o) => o.origin)).toEqual(['path: a.yaml\n', 'path: nested/c.yaml\n', 'path: sub/b.yml\n'])
  })

  it("writes targetNamespace, namePrefix, patches and images into the user's kustomization, after its own", async () => {
    const objects = await applied(
      {
        'apps/kustomization.yaml': 'namespace: mine\nresources: [deploy.yaml]\nimages: [{name: app, newTag: "1"}]\n',
        'apps/deploy.yaml':
          'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n  template:\n    spec:\n      containers: [{name: app, image: app}]\n',
      },
      {
        path: './apps',
        targetNamespace: 'theirs',
        namePrefix: 'p-',
        patches: [{ patch: '- op: add\n  path: /spec/replicas\n  value: 3', target: { kind: 'Deployment' } }],
        images: [{ name: 'app', newName: 'registry/app' }],
      },
    )
    expect(objects[0]?.object).toMatchObject({
      metadata: { name: 'p-app', namespace: 'theirs' },
      spec: { replicas: 3, template: { spec: { containers: [{ image: 'registry/app:1' }] } } },
    })
  })

  it('substitutes postBuild variables as kustomize-controller does: substituteFrom in order, inline over them, defaults, $$, the opt-out', async () => {
    const files = {
      'apps/kustomization.yaml': 'resources: [cm.yaml, raw.yaml]\n',
      'apps/cm.yaml': configMap('cm', { where: '${cluster}-${region}', token: '${token}', price: '$$5', fallback: '${missing:=x}', upper: '${cluster^^}' }),
      'apps/raw.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\n  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata: {where: "${cluster}"}\n',
    }
    const spec = {
      path: './apps',
      postBuild: {
        substitute: { region: 'us' },
        substituteFrom: [
          { kind: 'ConfigMap', name: 'vars' },
          { kind: 'Secret', name: 'secret-vars' },
        ],
      },
    }
    const values: ValuesObject[] = [
      { kind: 'ConfigMap', name: 'vars', data: { cluster: 'prod', region: 'eu\n' } },
      { kind: 'Secret', name: 'secret-vars', data: { token: 's3cr3t' } },
    ]
    const objects = await applied(files, spec, { values })
    expect(dataOf(objects, 'cm')).toEqual({ where: 'prod-us', token: 's3cr3t', price: '$5', fallback: 'x', upper: 'PROD' })
    expect(dataOf(objects, 'raw')).toEqual({ where: '${cluster}' })
    expect(objects.every((o) => o.unresolved === undefined)).toBe(true)
  })

  it('names the variables used with no value; an absent substituteFrom object counts as optional', async () => {
    const files = { 'apps/kustomization.yaml': 'resources: [cm.yaml]\n', 'apps/cm.yaml': configMap('cm', { a: '${known}', b: '${unknown}', c: '${other:-d}' }) }
    const spec = { path: './apps', postBuild: { substitute: { known: 'k' }, substituteFrom: [{ kind: 'ConfigMap', name: 'in-cluster' }] } }
    const objects = await applied(files, spec, { absent: ['ConfigMap/in-cluster'] })
    expect(objects[0]?.unresolved).toEqual(['unknown'])
    // Flux substitutes on the YAML text, unquoted: an empty value becomes a YAML null.
    expect(dataOf(objects, 'cm')).toEqual({ a: 'k', b: null, c: 'd' })
  })

  it('types a substituted value as YAML does, the way Flux applies it (an unquoted yes is a boolean)', async () => {
    const files = { 'apps/kustomization.yaml': 'resources: [cm.yaml]\n', 'apps/cm.yaml': configMap('cm', { flag: '${flag}', quoted: '"${flag}"' }) }
    const objects = await applied(files, { path: './apps', postBuild: { substitute: { flag: 'yes' } } })
    expect(dataOf(objects, 'cm')).toEqual({ flag: true, quoted: '"yes"' })
  })

  it('reports an object Flux refuses (a substitution it cannot parse) and keeps the others', async () => {
    const files = {
      'apps/kustomization.yaml': 'resources: [a.yaml, b.yaml]\n',
      'apps/a.yaml': configMap('a', { x: '${ok}' }),
      'apps/b.yaml': configMap('b', { x: '${unclosed' }),
    }
    const objects = await applied(files, { path: './apps', postBuild: { substitute: { ok: 'value' } } })
    expect(dataOf(objects, 'a')).toEqual({ x: 'value' })
    expect(objects.find((o) => o.name === 'b')?.error).toMatch(/post build failed for .*ConfigMap.*b/)
  })

  it('sets commonMetadata over the objects’ own labels and annotations', async () => {
    const objects = await applied(
      { 'apps/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {team: mine, keep: "1"}\n' },
      { path: './apps', commonMetadata: { labels: { team: 'platform' }, annotations: { owner: 'ops' } } },
    )
    expect(objects[0]?.object?.metadata).toEqual({ name: 'cm', labels: { team: 'platform', keep: '1' }, annotations: { owner: 'ops' } })
  })
})

describe('a hostile tree', () => {
  let server: Server
  let port = 0
  const requests: string[] = []

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests.push(req.url ?? '')
      res.end('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const build = (files: Record<string, string>): Promise<BuildAnswer> => sandbox.build({ path: 'apps', kustomization: flux({ path: './apps' }) }, tree(files))

  it.each([
    ['an absolute path', '/etc/hostname'],
    ['a path up out of the tree', '../../../../etc/hostname'],
    ['a process file', '/proc/self/environ'],
  ])('reads no file outside the tree: %s in a generator is "no such file"', async (_name, path) => {
    const answer = await build({ 'apps/kustomization.yaml': `configMapGenerator:\n- name: loot\n  files: [x=${path}]\n` })
    expect(answer.yaml).toBeUndefined()
    expect(answer.error).toMatch(/not in or below|no such file/i)
  })

  it.each([
    ['a resource URL', (p: number) => `resources: [http://127.0.0.1:${p}/x.yaml]`, (p: number) => `http://127.0.0.1:${p}/x.yaml`],
    [
      'a patch file URL',
      (p: number) => `resources: [cm.yaml]\npatches: [{path: "http://127.0.0.1:${p}/patch.yaml"}]`,
      (p: number) => `http://127.0.0.1:${p}/patch.yaml`,
    ],
    ['a CRD URL', (p: number) => `resources: [cm.yaml]\ncrds: [http://127.0.0.1:${p}/crd.yaml]`, (p: number) => `http://127.0.0.1:${p}/crd.yaml`],
    [
      'a generator file URL',
      (p: number) => `configMapGenerator: [{name: loot, files: ["k=http://127.0.0.1:${p}/meta"]}]`,
      (p: number) => `http://127.0.0.1:${p}/meta`,
    ],
    ['a git:: base', (p: number) => `resources: [cm.yaml, "git::http://127.0.0.1:${p}/evil.git"]`, (p: number) => `git::http://127.0.0.1:${p}/evil.git`],
    ['a github.com shorthand', () => 'resources: [cm.yaml, "github.com/acme/x/base?ref=v1"]', () => 'github.com/acme/x/base?ref=v1'],
    ['an SCP-style base', () => 'resources: [cm.yaml, "deploy@example.com:acme/x.git"]', () => 'deploy@example.com:acme/x.git'],
  ])('makes no request for %s: the build names the reference, and the rest of its tree still builds', async (_name, kustomization, reference) => {
    const answer = await build({ 'apps/kustomization.yaml': `${kustomization(port)}\n`, 'apps/cm.yaml': configMap('local', { k: 'v' }) })
    expect(answer.yaml).toBeUndefined()
    expect(answer.remote).toBe(reference(port))
    expect(requests).toEqual([])
  })

  it('ends a build past its deadline, and the next build runs', async () => {
    const quick = createSandbox({ deadlineMs: 300 })
    try {
      // Bases doubling at every level: 2^9 objects, each renamed nine times.
      const files: Record<string, string> = {
        'l0a/kustomization.yaml': 'resources: [cm.yaml]\n',
        'l0a/cm.yaml': configMap('c', { k: 'v' }),
        'l0b/kustomization.yaml': 'nameSuffix: -b\nresources: [../l0a]\n',
      }
      for (let i = 1; i <= 9; i++)
        for (const x of ['a', 'b']) files[`l${i}${x}/kustomization.yaml`] = `nameSuffix: -${x}\nresources: [../l${i - 1}a, ../l${i - 1}b]\n`
      files['apps/kustomization.yaml'] = 'resources: [../l9a]\n'
      const slow = await quick.build({ path: 'apps', kustomization: flux({ path: './apps' }) }, tree(files))
      expect(slow.error).toMatch(/ran longer than 0.3 s, the renderer's deadline/)
      const next = await quick.build({ path: 'apps', kustomization: flux({ path: './apps' }) }, tree({ 'apps/cm.yaml': configMap('c', { k: 'v' }) }))
      expect(next.yaml).toContain('name: c')
    } finally {
      await quick.close()
    }
  })

  it('ends a build past its memory maximum, and the next build runs', async () => {
    const small = createSandbox({ memoryBytes: 96 * 1024 * 1024 })
    try {
      const big = await small.build({ path: 'apps', kustomization: flux({ path: './apps' }) }, [
        ...tree({ 'apps/kustomization.yaml': 'configMapGenerator: [{name: big, files: [big.txt]}]\n' }),
        ['apps/big.txt', new Uint8Array(40 * 1024 * 1024).fill(120)],
      ])
      expect(big.error).toBe("it needed more than 96 MiB, the renderer's memory limit for one build")
      const next = await small.build({ path: 'apps', kustomization: flux({ path: './apps' }) }, tree({ 'apps/cm.yaml': configMap('c', { k: 'v' }) }))
      expect(next.yaml).toContain('name: c')
    } finally {
      await small.close()
    }
  })

  it('recovers from a kustomize panic as one error', async () => {
    const answer = await build({
      'apps/kustomization.yaml': 'resources: [cm.yaml]\n',
      'apps/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [not, a, name]}\n',
    })
    expect(answer.yaml).toBeUndefined()
    expect(answer.error).toBeTruthy()
  })
})
