// SOPS for tests, with the real tools: `sops` and `age-keygen` built from their Go
// modules by test/cluster/build.sh (target `sops`, pinned to the versions
// kustomize-controller decrypts with). A test makes its own age key, encrypts a Secret
// with it, and hands kustomize-controller the key in a Secret its Kustomization's
// `decryption` names.

import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { stringify } from 'yaml'
import { ensureBinaries } from './cluster.ts'

const execFileAsync = promisify(execFile)

/** The key kustomize-controller reads an age identity from: any Secret key ending in `.agekey`. */
export const AGE_KEY_FIELD = 'identity.agekey'

export interface SopsTools {
  readonly sops: string
  readonly ageKeygen: string
}

let tools: Promise<SopsTools> | undefined

/** Builds (once; cached across runs like the cluster's binaries) and returns sops and age-keygen. */
export function sopsTools(options: { log?: (line: string) => void } = {}): Promise<SopsTools> {
  tools ??= ensureBinaries(['sops'], options).then((paths) => {
    if (!paths.sops || !paths['age-keygen']) throw new Error('test/cluster/build.sh sops built no sops or age-keygen')
    return { sops: paths.sops, ageKeygen: paths['age-keygen'] }
  })
  return tools
}

export interface AgeKey {
  /** The public key (`age1…`) sops encrypts to. */
  readonly recipient: string
  /** The identity file age-keygen wrote (comments and `AGE-SECRET-KEY-1…`); it decrypts. */
  readonly identity: string
}

/** A fresh age key pair from the real age-keygen. */
export async function makeAgeKey(): Promise<AgeKey> {
  const { ageKeygen } = await sopsTools()
  const { stdout } = await execFileAsync(ageKeygen, [], { env: toolEnv() })
  const recipient = /^# public key: (age1[0-9a-z]+)$/m.exec(stdout)?.[1]
  if (!recipient || !/^AGE-SECRET-KEY-1[0-9A-Z]+$/m.test(stdout)) throw new Error('age-keygen printed no key pair')
  return { recipient, identity: stdout }
}

/**
 * A Secret manifest with its `data`/`stringData` values encrypted by the real sops for
 * `recipient`, as a repository would hold it (kustomize-controller decrypts it on apply).
 */
export async function encryptSecret(secret: Readonly<Record<string, unknown>>, recipient: string): Promise<string> {
  const { sops } = await sopsTools()
  const dir = await mkdtemp(join(tmpdir(), 'hrt-sops-'))
  try {
    const file = join(dir, 'secret.yaml')
    await writeFile(file, stringify(secret))
    const { stdout } = await execFileAsync(
      sops,
      ['--encrypt', '--age', recipient, '--encrypted-regex', '^(data|stringData)$', '--input-type', 'yaml', '--output-type', 'yaml', file],
      { cwd: dir, env: toolEnv() },
    )
    return stdout
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** The Secret holding the age identity, for a Kustomization's `decryption.secretRef`. */
export function ageKeySecret(namespace: string, name: string, key: AgeKey): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', stringData: { [AGE_KEY_FIELD]: key.identity } }
}

// No ambient keys or configuration: the test's key is the only one in play.
function toolEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: tmpdir() }
}
