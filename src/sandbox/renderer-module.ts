// The renderer module (renderer/, Go compiled to WebAssembly, shipped brotli-compressed in dist/):
// read, inflated, given its memory maximum and compiled by the first renderer thread, off the main
// thread (whose event loop is busy reading git at that moment), and only when a Flux
// Kustomization must be rendered. The compiled module is handed back and shared with the other
// threads.

import { access, readFile } from 'node:fs/promises'
import { brotliDecompressSync } from 'node:zlib'
import { ConfigurationError } from '../lib/errors.ts'
import { withMemoryMaximum } from './memory-limit.ts'

/** Next to the bundle (dist/index.js, dist/cli.js, dist/sandbox-worker.js); from source, the committed dist/ copy. */
export const RENDERER_URL = new URL(import.meta.url.endsWith('.ts') ? '../../dist/renderer.wasm.br' : './renderer.wasm.br', import.meta.url)

let checked: Promise<void> | undefined

/** Resolves when the module is installed; a missing one is the installation's fault, said once. */
export function rendererInstalled(): Promise<void> {
  checked ??= access(RENDERER_URL).catch((error: unknown) => {
    throw new ConfigurationError(
      `The renderer module ${RENDERER_URL.pathname} is missing (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}); reinstall helmrelease-trigger, or run npm run bundle in a clone.`,
      { cause: error },
    )
  })
  return checked
}

/** The module compiled, its memory limited to `memoryBytes` (on a renderer thread: inflating blocks it). */
export async function compileRenderer(memoryBytes: number): Promise<WebAssembly.Module> {
  const bytes = new Uint8Array(brotliDecompressSync(await readFile(RENDERER_URL)))
  return WebAssembly.compile(withMemoryMaximum(bytes, memoryBytes))
}
