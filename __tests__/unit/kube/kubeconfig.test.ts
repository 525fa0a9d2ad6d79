// Where the cluster comes from. Every case runs on an `env` object and temp directories, never
// the real process environment or home. Errors must never echo the kubeconfig or its secrets.

import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigurationError } from '../../../src/lib/errors.ts'
import { decode, loadKubeconfig, type KubeconfigRequest } from '../../../src/kube/kubeconfig.ts'
import type { KubeconfigEncoding } from '../../../src/settings.ts'

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.c2VydmljZWFjY291bnQ.SIGNATURE-do-not-leak-0123456789'
const PASSWORD = 'hunter2-but-longer'
const KEY_PEM =
  '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nTOPSECRETKEYMATERIALthatmustbemasked0123456789abcd\n-----END PRIVATE KEY-----\n'
const CERT_PEM = '-----BEGIN CERTIFICATE-----\nMIIDBTCCAe2gAwIBAgIIPUBLICCERTIFICATEBODY0123456789\n-----END CERTIFICATE-----\n'
const KEY_DATA = Buffer.from(KEY_PEM).toString('base64')
const CERT_DATA = Buffer.from(CERT_PEM).toString('base64')

const b64 = (text: string): string => Buffer.from(text).toString('base64')

/** A kubeconfig with two contexts: `dev` (token user, current) and `prod` (client certificate user). */
function kubeconfigYaml(o: { current?: string; devServer?: string } = {}): string {
  return `apiVersion: v1
kind: Config
clusters:
  - name: dev
    cluster:
      server: ${o.devServer ?? 'https://dev.example.test:6443'}
  - name: prod
    cluster:
      server: https://prod.example.test:6443
users:
  - name: dev-user
    user:
      token: ${TOKEN}
  - name: prod-user
    user:
      client-certificate-data: ${CERT_DATA}
      client-key-data: ${KEY_DATA}
  - name: basic-user
    user:
      username: admin
      password: ${PASSWORD}
contexts:
  - name: dev
    context: { cluster: dev, user: dev-user }
  - name: prod
    context: { cluster: prod, user: prod-user, namespace: apps }
${o.current === undefined ? 'current-context: dev' : o.current === '' ? '' : `current-context: ${o.current}`}
`
}

const scratch: string[] = []
afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })))
})

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hrt-kubeconfig-'))
  scratch.push(dir)
  return dir
}

/** An env with an empty home and nothing else: the machine's own settings never leak in. */
async function emptyEnv(extra: Readonly<Record<string, string>> = {}): Promise<Record<string, string>> {
  return { HOME: await tempDir(), ...extra }
}

async function request(o: Partial<KubeconfigRequest> = {}): Promise<KubeconfigRequest> {
  return { kubeconfig: undefined, encoding: 'auto', context: undefined, env: o.env ?? (await emptyEnv()), ...o }
}

function errorOf(fn: () => unknown): ConfigurationError {
  try {
    fn()
  } catch (error) {
    if (error instanceof ConfigurationError) return error
    throw error
  }
  throw new Error('expected a ConfigurationError')
}

/** The message says nothing of the kubeconfig's content: not the text, not its base64, no secret. */
function expectNoLeak(message: string, input: string): void {
  expect(message).not.toContain(input.trim())
  for (const secret of [TOKEN, PASSWORD, KEY_DATA, CERT_DATA, 'TOPSECRETKEYMATERIAL']) expect(message).not.toContain(secret)
}

describe('loadKubeconfig from the input', () => {
  const plain = kubeconfigYaml()
  const cases: readonly (readonly [string, string, KubeconfigEncoding])[] = [
    ['plain YAML, auto', plain, 'auto'],
    ['plain YAML, explicit', plain, 'plain'],
    ['plain YAML with surrounding blank lines', `\n\n${plain}\n\n`, 'auto'],
    [
      'JSON',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'dev', cluster: { server: 'https://dev.example.test:6443' } }],
        users: [{ name: 'dev-user', user: { token: TOKEN } }],
        contexts: [{ name: 'dev', context: { cluster: 'dev', user: 'dev-user' } }],
        'current-context': 'dev',
      }),
      'auto',
    ],
    ['base64, auto', b64(plain), 'auto'],
    ['base64, explicit', b64(plain), 'base64'],
    ['base64 wrapped at 76 columns (base64 without -w0)', (b64(plain).match(/.{1,76}/g) ?? []).join('\n'), 'auto'],
    ['base64 with a trailing newline', `${b64(plain)}\n`, 'base64'],
  ]

  it.each(cases)('%s → the current context of the decoded file', async (_, text, encoding) => {
    const loaded = loadKubeconfig(await request({ kubeconfig: text, encoding }))
    expect(loaded.origin).toBe('input')
    expect(loaded.server).toBe('https://dev.example.test:6443')
    expect(loaded.config.getCurrentContext()).toBe('dev')
    expect(loaded.secrets).toContain(TOKEN)
  })

  it('switches to the requested context', async () => {
    const loaded = loadKubeconfig(await request({ kubeconfig: plain, context: 'prod' }))
    expect(loaded.server).toBe('https://prod.example.test:6443')
    expect(loaded.config.getCurrentContext()).toBe('prod')
  })

  it('prefers the input over KUBECONFIG and ~/.kube/config', async () => {
    const env = await emptyEnv({ KUBECONFIG: '/nonexistent/kubeconfig' })
    await mkdir(join(env['HOME'] ?? '', '.kube'))
    await writeFile(join(env['HOME'] ?? '', '.kube', 'config'), kubeconfigYaml({ devServer: 'https://home.example.test:6443' }))
    const loaded = loadKubeconfig(await request({ kubeconfig: b64(plain), env }))
    expect([loaded.origin, loaded.server]).toEqual(['input', 'https://dev.example.test:6443'])
  })
})

describe('loadKubeconfig refuses a bad input without echoing it', () => {
  const cases: readonly (readonly [string, string, KubeconfigEncoding, string])[] = [
    [
      'invalid base64, explicit',
      `${TOKEN}!!*`,
      'base64',
      "The kubeconfig input is not valid base64 (kubeconfig-encoding: base64); encode the file with 'base64 -w0'.",
    ],
    [
      'neither YAML nor base64, auto',
      `${PASSWORD} ${TOKEN}!`,
      'auto',
      "The kubeconfig input is neither kubeconfig YAML nor base64 of it; paste the file's content or 'base64 -w0' of it.",
    ],
    [
      'base64 of something that is not YAML',
      b64(`just a token ${TOKEN}`),
      'auto',
      'The kubeconfig input decodes from base64 to something that is not kubeconfig YAML; check the secret holds the right file.',
    ],
    [
      'not valid YAML',
      `clusters:\n  - name: dev\nusers:\n  - name: u\n    user:\n      token: ${TOKEN}\n  [unclosed: {\n`,
      'auto',
      'The kubeconfig input is not valid YAML',
    ],
    ['not valid YAML (base64)', b64(`users:\n  - user: { token: ${TOKEN}\n    broken: [\n`), 'base64', 'The kubeconfig input is not valid YAML'],
    [
      'YAML without clusters',
      `users:\n  - name: u\n    user:\n      token: ${TOKEN}\n`,
      'auto',
      "The kubeconfig input is not a kubeconfig: it has no 'clusters' list.",
    ],
    [
      'YAML without clusters (base64)',
      b64(`users:\n  - name: u\n    user:\n      password: ${PASSWORD}\n`),
      'auto',
      "The kubeconfig input is not a kubeconfig: it has no 'clusters' list.",
    ],
    ['a YAML list', `- token: ${TOKEN}\n- clusters: []\n`, 'plain', "The kubeconfig input is not a kubeconfig: it has no 'clusters' list."],
    [
      'a cluster entry without its cluster',
      `clusters:\n  - name: dev\nusers:\n  - name: u\n    user:\n      token: ${TOKEN}\n`,
      'auto',
      'The kubeconfig input is not a valid kubeconfig: clusters[0].cluster is missing.',
    ],
    [
      'clusters but no current context',
      kubeconfigYaml({ current: '' }),
      'auto',
      "The kubeconfig (input) has no current context with a cluster server; set current-context or the 'context' input.",
    ],
  ]

  it.each(cases)('%s', async (_, text, encoding, expected) => {
    const error = errorOf(() => loadKubeconfig({ kubeconfig: text, encoding, context: undefined, env: { HOME: '/nonexistent-home' } }))
    expect(error.message.startsWith(expected)).toBe(true)
    expectNoLeak(error.message, text)
  })

  it('names the line of a YAML error, and only the line', async () => {
    const text = `clusters:\n  - name: dev\n    cluster: {server: "https://x:6443"\nusers: [{name: u, user: {token: ${TOKEN}}}]\n`
    const error = errorOf(() => loadKubeconfig({ kubeconfig: text, encoding: 'plain', context: undefined, env: {} }))
    expect(error.message).toMatch(/^The kubeconfig input is not valid YAML \(line \d+\); check the secret's content\.$/)
    expectNoLeak(error.message, text)
  })

  it('lists the available contexts when the requested one is missing', async () => {
    const text = kubeconfigYaml()
    const error = errorOf(() => loadKubeconfig({ kubeconfig: text, encoding: 'auto', context: 'staging', env: {} }))
    expect(error.message).toBe("Context 'staging' is not in the kubeconfig (input); it has: dev, prod.")
    expectNoLeak(error.message, text)
  })

  it('says there are no contexts at all when there are none', async () => {
    const text = 'clusters:\n  - name: dev\n    cluster: { server: https://dev.example.test:6443 }\n'
    expect(errorOf(() => loadKubeconfig({ kubeconfig: text, encoding: 'auto', context: 'dev', env: {} })).message).toBe(
      "Context 'dev' is not in the kubeconfig (input); it has: no contexts.",
    )
  })
})

describe('decode', () => {
  it.each([
    ['plain passes through trimmed', '  a: b  ', 'auto', 'a: b'],
    ['explicit plain is never decoded', 'YTogYg==', 'plain', 'YTogYg=='],
    ['auto decodes base64', 'YTogYg==', 'auto', 'a: b'],
    ['url-safe base64 decodes too', Buffer.from('k: ~?>').toString('base64url'), 'base64', 'k: ~?>'],
  ] as const)('%s', (_, text, encoding, expected) => {
    expect(decode(text, encoding)).toBe(expected)
  })
})

describe('loadKubeconfig without the input', () => {
  it('reads the file KUBECONFIG names', async () => {
    const dir = await tempDir()
    const file = join(dir, 'config')
    await writeFile(file, kubeconfigYaml({ current: 'prod' }))
    const loaded = loadKubeconfig(await request({ env: await emptyEnv({ KUBECONFIG: file }) }))
    expect([loaded.origin, loaded.server, loaded.config.getCurrentContext()]).toEqual([file, 'https://prod.example.test:6443', 'prod'])
  })

  it('merges the files KUBECONFIG lists, skips missing ones, and keeps the first file’s current context', async () => {
    const dir = await tempDir()
    const first = join(dir, 'first')
    const second = join(dir, 'second')
    await writeFile(
      first,
      'apiVersion: v1\nkind: Config\nclusters:\n  - name: one\n    cluster: { server: https://one.example.test }\nusers:\n  - name: u1\n    user: { token: token-one-0123 }\ncontexts:\n  - name: one\n    context: { cluster: one, user: u1 }\ncurrent-context: one\n',
    )
    await writeFile(second, kubeconfigYaml({ current: 'prod' }))
    const loaded = loadKubeconfig(await request({ env: await emptyEnv({ KUBECONFIG: `${first}:${join(dir, 'missing')}:${second}` }) }))
    expect(loaded.origin).toBe(`${first}:${second}`)
    expect(loaded.server).toBe('https://one.example.test')
    expect(
      loaded.config
        .getContexts()
        .map((c) => c.name)
        .sort(),
    ).toEqual(['dev', 'one', 'prod'])
    expect(loaded.secrets).toEqual(expect.arrayContaining(['token-one-0123', TOKEN]))
  })

  it('fails clearly when KUBECONFIG names only missing files, even with ~/.kube/config present', async () => {
    const env = await emptyEnv()
    await mkdir(join(env['HOME'] ?? '', '.kube'))
    await writeFile(join(env['HOME'] ?? '', '.kube', 'config'), kubeconfigYaml())
    const missing = join(env['HOME'] ?? '', 'nope', 'config')
    const error = errorOf(() => loadKubeconfig({ kubeconfig: undefined, encoding: 'auto', context: undefined, env: { ...env, KUBECONFIG: missing } }))
    expect(error.message).toBe(`KUBECONFIG names ${missing}, but no such file exists; fix KUBECONFIG or set the 'kubeconfig' input.`)
  })

  it('treats a blank KUBECONFIG as unset and reads ~/.kube/config', async () => {
    const env = await emptyEnv({ KUBECONFIG: '  ' })
    const file = join(env['HOME'] ?? '', '.kube', 'config')
    await mkdir(join(env['HOME'] ?? '', '.kube'))
    await writeFile(file, kubeconfigYaml())
    const loaded = loadKubeconfig(await request({ env }))
    expect([loaded.origin, loaded.server]).toEqual([file, 'https://dev.example.test:6443'])
  })

  it('refuses a ~/.kube/config that is not a kubeconfig, naming the file, not its content', async () => {
    const env = await emptyEnv()
    const file = join(env['HOME'] ?? '', '.kube', 'config')
    await mkdir(join(env['HOME'] ?? '', '.kube'))
    await writeFile(file, `clusters:\n  - name: dev\nusers:\n  - name: u\n    user: { token: ${TOKEN} }\n`)
    const error = errorOf(() => loadKubeconfig({ kubeconfig: undefined, encoding: 'auto', context: undefined, env }))
    expect(error.message).toBe(`The kubeconfig file ${file} cannot be read as a kubeconfig: clusters[0].cluster is missing.`)
    expectNoLeak(error.message, TOKEN)
  })

  it('never falls back to localhost: no input, no KUBECONFIG, no ~/.kube/config, not in a cluster is an error', async () => {
    const env = await emptyEnv()
    const error = errorOf(() => loadKubeconfig({ kubeconfig: undefined, encoding: 'auto', context: undefined, env }))
    expect(error.message).toBe("No Kubernetes cluster is configured: set the 'kubeconfig' input (plain or base64), or KUBECONFIG, or run inside a cluster.")
    expect(error.message).not.toContain('localhost')
  })

  it.skipIf(existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token'))(
    'is still an error with KUBERNETES_SERVICE_HOST set but no service account token',
    async () => {
      const env = await emptyEnv({ KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' })
      expect(errorOf(() => loadKubeconfig({ kubeconfig: undefined, encoding: 'auto', context: undefined, env })).message).toMatch(
        /^No Kubernetes cluster is configured/,
      )
    },
  )
})

describe('secrets', () => {
  it('holds the token, the client key and certificate data, the password, and the decoded key lines', async () => {
    const { secrets } = loadKubeconfig(await request({ kubeconfig: kubeconfigYaml(), context: 'prod' }))
    expect(secrets).toEqual(expect.arrayContaining([TOKEN, KEY_DATA, CERT_DATA, PASSWORD]))
    // A PEM body line, as it would appear in an error quoting the decoded key.
    expect(secrets).toContain('TOPSECRETKEYMATERIALthatmustbemasked0123456789abcd')
    expect(secrets.some((s) => s.startsWith('-----'))).toBe(false)
    expect(new Set(secrets).size).toBe(secrets.length)
  })

  it('holds the auth-provider config values', async () => {
    const text = `clusters:\n  - name: c\n    cluster: { server: https://c.example.test }\nusers:\n  - name: u\n    user:\n      auth-provider:\n        name: oidc\n        config:\n          id-token: oidc-id-token-value-123\n          refresh-token: oidc-refresh-token-456\ncontexts:\n  - name: c\n    context: { cluster: c, user: u }\ncurrent-context: c\n`
    const { secrets } = loadKubeconfig(await request({ kubeconfig: text }))
    expect(secrets).toEqual(expect.arrayContaining(['oidc-id-token-value-123', 'oidc-refresh-token-456']))
  })
})

describe('exec credential plugins and tokens (audit F10)', () => {
  const SECRET_KEY = 'wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY'
  const execKubeconfig = (command: string, args: string[]) => `clusters:
  - name: c
    cluster: { server: https://c.example.test, proxy-url: "http://proxyuser:proxy-pass-0123@proxy.example.test:3128" }
users:
  - name: u
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1
        command: ${command}
        args: ${JSON.stringify(args)}
        env:
          - name: AWS_SECRET_ACCESS_KEY
            value: ${SECRET_KEY}
contexts:
  - name: c
    context: { cluster: c, user: u }
current-context: c
`

  it('masks exec env values, secret-looking exec args and the proxy password', async () => {
    const { secrets } = loadKubeconfig(
      await request({ kubeconfig: execKubeconfig('aws', ['eks', 'get-token', '--role-arn=arn:aws:iam::1:role/x', 'sk-arg-0123456789']) }),
    )
    expect(secrets).toEqual(expect.arrayContaining([SECRET_KEY, 'arn:aws:iam::1:role/x', 'sk-arg-0123456789', 'proxy-pass-0123']))
    expect(secrets).not.toContain('get-token')
  })

  it("a failing plugin's error output (the audit reproducer echoes its secret env) is never in the error", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hrt-exec-'))
    const plugin = join(dir, 'aws')
    await writeFile(plugin, '#!/bin/sh\necho "aws: error: could not assume role with secret key $AWS_SECRET_ACCESS_KEY" >&2\nexit 3\n', { mode: 0o755 })
    const { config } = loadKubeconfig(await request({ kubeconfig: execKubeconfig(plugin, []) }))
    const error: unknown = await config.applyToHTTPSOptions({}).then(
      () => undefined,
      (e: unknown) => e,
    )
    await rm(dir, { recursive: true, force: true })
    expect(error).toBeInstanceOf(ConfigurationError)
    const message = error instanceof Error ? error.message : ''
    expect(message).not.toContain(SECRET_KEY)
    expect(message).toBe(
      "The kubeconfig's exec credential plugin 'aws' failed (exit 3); its error output is not shown, as it may hold credentials. Run it by hand to see why.",
    )
  })

  it('a token is masked as it is, never base64-decoded as if it were base64', async () => {
    const token = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
    const text = `clusters:\n  - name: c\n    cluster: { server: https://c.example.test }\nusers:\n  - name: u\n    user: { token: ${token} }\ncontexts:\n  - name: c\n    context: { cluster: c, user: u }\ncurrent-context: c\n`
    const { secrets } = loadKubeconfig(await request({ kubeconfig: text }))
    expect(secrets).toEqual([token])
  })
})
