// The renderer module (renderer/, Go compiled to WebAssembly, shipped brotli-compressed in dist/): read,
// inflated and compiled once per process, off the main thread's way (zlib on the thread pool,
// V8 compiling in the background), only when a Flux Kustomization must be rendered.

import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { brotliDecompress } from 'node:zlib'
import { ConfigurationError } from '../lib/errors.ts'
import { withMemoryMaximum } from './memory-limit.ts'

/** Next to the bundle (dist/index.js, dist/cli.js); from source, the committed dist/ copy. */
export const RENDERER_URL = new URL(import.meta.url.endsWith('.ts') ? '../../dist/renderer.wasm.br' : './renderer.wasm.br', import.meta.url)

const compiled = new Map<number, Promise<WebAssembly.Module>>()

/** The module, its memory limited to `memoryBytes`. */
export function rendererModule(memoryBytes: number): Promise<WebAssembly.Module> {
  let found = compiled.get(memoryBytes)
  if (found === undefined) {
    found = load(memoryBytes)
    found.catch(() => {})
    compiled.set(memoryBytes, found)
  }
  return found
}

async function load(memoryBytes: number): Promise<WebAssembly.Module> {
  let packed: Buffer
  try {
    packed = await readFile(RENDERER_URL)
  } catch (error) {
    throw new ConfigurationError(
      `The renderer module ${RENDERER_URL.pathname} is missing (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}); reinstall helmrelease-trigger, or run npm run bundle in a clone.`,
      { cause: error },
    )
  }
  const bytes = new Uint8Array(await promisify(brotliDecompress)(packed))
  return WebAssembly.compile(withMemoryMaximum(bytes, memoryBytes))
}
