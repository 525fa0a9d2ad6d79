// The kustomize we drive: the real one, never a reimplementation. Found once per run
// (the `kustomize-path` input, else `kustomize` on PATH, else `kubectl kustomize`), then asked
// to build directories. A failed build is a result, not an exception: the caller reports it
// against the Flux Kustomization and goes on with the others.

import { spawn } from 'node:child_process'
import { access, constants } from 'node:fs/promises'
import { delimiter, join } from 'node:path'
import { ConfigurationError } from '../lib/errors.ts'
import { BuildLanes } from './build-lanes.ts'

export type BuildResult = { readonly ok: true; readonly output: string } | { readonly ok: false; readonly error: string }

export interface Kustomize {
  /** How it is run, for messages: `kustomize` or `kubectl kustomize`, with the path. */
  readonly description: string
  /** `kustomize build` of a directory as kustomize-controller builds it (files outside the root allowed). */
  build(directory: string, options?: { readonly signal?: AbortSignal }): Promise<BuildResult>
}

export interface LocateOptions {
  /** The `kustomize-path` input: an executable, taken as is. */
  readonly path?: string | undefined
  /** Search path; default process.env.PATH. */
  readonly searchPath?: string | undefined
}

/** kustomize's errors quote files and values; a bounded, printable excerpt is all we pass on. */
const ERROR_LIMIT = 600
/** A build printing more than this is not a Flux tree we can plan on. */
const OUTPUT_LIMIT = 256 * 1024 * 1024

const INSTALL_HINT =
  'install kustomize v5 (https://kubectl.docs.kubernetes.io/installation/kustomize/) or kubectl, or set the kustomize-path input to a kustomize binary'

export async function locateKustomize(options: LocateOptions = {}): Promise<Kustomize> {
  if (options.path !== undefined && options.path !== '') {
    if (!(await isExecutable(options.path))) throw new ConfigurationError(`kustomize-path ${options.path} is not an executable file; ${INSTALL_HINT}.`)
    return kustomizeAt(options.path, [], `kustomize (${options.path})`)
  }
  const searchPath = options.searchPath ?? process.env.PATH ?? ''
  const kustomize = await which('kustomize', searchPath)
  if (kustomize !== undefined) return kustomizeAt(kustomize, [], `kustomize (${kustomize})`)
  const kubectl = await which('kubectl', searchPath)
  if (kubectl !== undefined) return kustomizeAt(kubectl, ['kustomize'], `kubectl kustomize (${kubectl})`)
  throw new ConfigurationError(`This repository is applied by Flux Kustomizations, and rendering them needs kustomize, which was not found: ${INSTALL_HINT}.`)
}

/** A kustomize (or `kubectl` with `kustomize` as first argument) at a known path. */
export function kustomizeAt(executable: string, prefix: readonly string[], description = executable): Kustomize {
  const command = [executable, ...(prefix.length > 0 ? prefix : ['build']), '--load-restrictor', 'LoadRestrictionsNone']
  const lanes = new BuildLanes(command, BUILD_ENV(), OUTPUT_LIMIT)
  return {
    description,
    build: async (directory, options) => {
      if (!BuildLanes.carries(directory)) return run(command, directory, options?.signal)
      const outcome = await lanes.run(directory, options?.signal)
      if (outcome.kind === 'failed') return { ok: false, error: outcome.error }
      if (outcome.kind === 'overflow') return { ok: false, error: OVERFLOW }
      if (outcome.code === 0) return { ok: true, output: outcome.output }
      return { ok: false, error: failure(outcome.errors, outcome.code) }
    },
  }
}

async function which(name: string, searchPath: string): Promise<string | undefined> {
  for (const dir of searchPath.split(delimiter)) {
    if (dir === '') continue
    const candidate = join(dir, name)
    if (await isExecutable(candidate)) return candidate
  }
  return undefined
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  )
}

/** No network credentials, no plugins: kustomize-controller builds with plugins disabled too. */
const BUILD_ENV = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' })
const OVERFLOW = `the build printed more than ${OUTPUT_LIMIT / 1024 / 1024} MiB`

function failure(stderr: string, code: number | null): string {
  return boundedError(stderr) || `exit ${code ?? 'by signal'}`
}

/** A build spawned from Node itself, for a directory a lane cannot carry. */
function run(command: readonly string[], directory: string, signal: AbortSignal | undefined): Promise<BuildResult> {
  return new Promise((resolve) => {
    const [executable = '', ...args] = command
    const child = spawn(executable, [...args, directory], { stdio: ['ignore', 'pipe', 'pipe'], signal, env: BUILD_ENV() })
    const out: Buffer[] = []
    let outBytes = 0
    const err: Buffer[] = []
    let errBytes = 0
    let overflow = false
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length
      if (outBytes > OUTPUT_LIMIT) {
        overflow = true
        child.kill()
        return
      }
      out.push(chunk)
    })
    child.stderr.on('data', (chunk: Buffer) => {
      if (errBytes < 64 * 1024) err.push(chunk)
      errBytes += chunk.length
    })
    child.on('error', (error) => resolve({ ok: false, error: boundedError(error.message) }))
    child.on('close', (code) => {
      if (overflow) resolve({ ok: false, error: OVERFLOW })
      else if (code === 0) resolve({ ok: true, output: Buffer.concat(out).toString('utf8') })
      else resolve({ ok: false, error: failure(Buffer.concat(err).toString('utf8'), code) })
    })
  })
}

/** kustomize's own error, made printable and short: control characters dropped, one line, bounded. */
export function boundedError(text: string): string {
  const oneLine = text
    .replace(/^Error: /, '')
    // eslint-disable-next-line no-control-regex -- control characters are what we remove
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return oneLine.length > ERROR_LIMIT ? `${oneLine.slice(0, ERROR_LIMIT)}…` : oneLine
}
