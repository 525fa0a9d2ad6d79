// How the renderer module sees a build's files: an in-memory WASI filesystem fed from git's
// bytes (@bjorn3/browser_wasi_shim, what src/sandbox/worker.ts uses) against Node's own node:wasi
// with the files written to a private temporary directory that is preopened. Same module, same
// builds (each app of a 40-Kustomization repository, then its root), one long-lived instance per
// host in this process, alternating build by build; each figure is the median of a build's
// wall time including laying out its files (and, for node:wasi, removing them).
//
//   node --experimental-strip-types bench/wasi-host.ts [--apps 39] [--reps 5]

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { parseArgs } from 'node:util'
import { WASI as NodeWasi } from 'node:wasi'
import { brotliDecompressSync } from 'node:zlib'
import { ConsoleStdout, Directory, File, OpenFile, PreopenDirectory, WASI, type Inode } from '@bjorn3/browser_wasi_shim'
import { RENDERER_URL } from '../src/sandbox/renderer-module.ts'
import { fleet } from './render.ts'
import { median, ms, now } from './lib.ts'

interface Exports {
  readonly memory: WebAssembly.Memory
  hrt_alloc(size: number): number
  hrt_free(pointer: number): void
  hrt_call(pointer: number, size: number): bigint
}

const { values } = parseArgs({ options: { apps: { type: 'string', default: '39' }, reps: { type: 'string', default: '5' } } })
const apps = Number(values.apps)
const reps = Number(values.reps)
const encoder = new TextEncoder()
const files = Object.entries(fleet(apps, 20, 1)).map(([path, text]) => [path, encoder.encode(text)] as const)
const module = await WebAssembly.compile(new Uint8Array(brotliDecompressSync(readFileSync(RENDERER_URL))))

function call(exports: Exports, request: unknown): { build?: { yaml?: string; error?: string } } {
  const bytes = encoder.encode(JSON.stringify(request))
  const input = exports.hrt_alloc(bytes.length)
  new Uint8Array(exports.memory.buffer, input, bytes.length).set(bytes)
  const packed = exports.hrt_call(input, bytes.length)
  exports.hrt_free(input)
  const pointer = Number(packed >> 32n)
  const text = new TextDecoder().decode(new Uint8Array(exports.memory.buffer, pointer, Number(packed & 0xffffffffn)).slice())
  exports.hrt_free(pointer)
  return JSON.parse(text)
}

// In memory: a fresh directory of File objects per build, as the sandbox does.
const root = new Map<string, Inode>()
const shim = new WASI(
  ['renderer'],
  [],
  [new OpenFile(new File([])), ConsoleStdout.lineBuffered(() => {}), ConsoleStdout.lineBuffered(() => {}), new PreopenDirectory('/', root)],
  { debug: false },
)
const shimInstance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: shim.wasiImport })
shim.initialize(shimInstance as unknown as { exports: { memory: WebAssembly.Memory } })
const shimExports = shimInstance.exports as unknown as Exports

// node:wasi: the files written under a private directory preopened as /work.
const work = mkdtempSync(join(tmpdir(), 'hrt-wasi-host-'))
const node = new NodeWasi({ version: 'preview1', args: ['renderer'], env: {}, preopens: { '/work': work }, returnOnExit: true })
const nodeInstance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: node.wasiImport as Record<string, unknown> })
node.initialize(nodeInstance as unknown as object)
const nodeExports = nodeInstance.exports as unknown as Exports

function inMemory(path: string, id: number, chosen: readonly (readonly [string, Uint8Array])[]): string | undefined {
  const top = new Directory(new Map())
  for (const [p, bytes] of chosen) {
    let dir = top
    const parts = p.split('/')
    for (const part of parts.slice(0, -1)) {
      let next = dir.contents.get(part)
      if (next === undefined) dir.contents.set(part, (next = new Directory(new Map())))
      dir = next as Directory
    }
    dir.contents.set(parts.at(-1) ?? '', new File(bytes))
  }
  root.set(`b${id}`, top)
  try {
    return call(shimExports, { op: 'build', build: { root: `/b${id}`, path, kustomization: flux(path) } }).build?.error
  } finally {
    root.delete(`b${id}`)
  }
}

function onDisk(path: string, id: number, chosen: readonly (readonly [string, Uint8Array])[]): string | undefined {
  const dir = join(work, `b${id}`)
  for (const [p, bytes] of chosen) {
    mkdirSync(dirname(join(dir, p)), { recursive: true })
    writeFileSync(join(dir, p), bytes)
  }
  try {
    return call(nodeExports, { op: 'build', build: { root: `/work/b${id}`, path, kustomization: flux(path) } }).build?.error
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function flux(path: string): Record<string, unknown> {
  return { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', metadata: { name: 'b', namespace: 'flux-system' }, spec: { path: `./${path}` } }
}

const cases = [
  { what: 'one app (21 files)', path: 'apps/app-7', chosen: files.filter(([p]) => p.startsWith('apps/app-7/')) },
  { what: `the root (${apps + 2} files)`, path: 'clusters/bench', chosen: files.filter(([p]) => p.startsWith('clusters/bench/')) },
  { what: `every app, one after another (${apps} builds)`, path: '', chosen: [] as (readonly [string, Uint8Array])[] },
]
let id = 0
process.stdout.write(`\nThe renderer's filesystem: in memory (browser_wasi_shim) against node:wasi with a preopened temporary directory; ${reps} reps\n\n`)
process.stdout.write('| builds | in memory | node:wasi + temporary directory | ratio |\n|---|---|---|---|\n')
for (const c of cases) {
  const timesMemory: number[] = []
  const timesDisk: number[] = []
  for (let r = 0; r < reps + 1; r++) {
    const run = (host: typeof inMemory): number => {
      const t0 = now()
      const targets = c.path === '' ? Array.from({ length: apps }, (_, i) => `apps/app-${i}`) : [c.path]
      for (const path of targets) {
        const chosen = c.path === '' ? files.filter(([p]) => p.startsWith(`${path}/`)) : c.chosen
        const error = host(path, ++id, chosen)
        if (error !== undefined) throw new Error(`${path}: ${error}`)
      }
      return now() - t0
    }
    const a = run(inMemory)
    const b = run(onDisk)
    // The first rep compiles the module's functions (V8 compiles them on first call): not counted.
    if (r > 0) {
      timesMemory.push(a)
      timesDisk.push(b)
    }
  }
  process.stdout.write(`| ${c.what} | ${ms(median(timesMemory))} | ${ms(median(timesDisk))} | ${(median(timesMemory) / median(timesDisk)).toFixed(2)}× |\n`)
}
rmSync(work, { recursive: true, force: true })
