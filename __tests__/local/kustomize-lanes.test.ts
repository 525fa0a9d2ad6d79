// The lanes that start kustomize builds (src/kustomize/build-lanes.ts), driven with small shell
// scripts standing in for kustomize: each build gets its own output and status, a failure keeps
// kustomize's message, a runaway output is refused, an abort stops the build, a directory that
// cannot travel as one line is built directly, and an idle lane never keeps the process alive.
// The real kustomize goes through the same lanes in every render test.

import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { BuildLanes } from '../../src/kustomize/build-lanes.ts'
import { kustomizeAt } from '../../src/kustomize/kustomize.ts'

const dir = mkdtempSync(join(tmpdir(), 'hrt-lanes-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A stand-in kustomize: prints the directory's out.txt, its stderr.txt to stderr, exits with its code. */
const fake = join(dir, 'fake-kustomize')
writeFileSync(
  fake,
  '#!/bin/sh\nfor last; do :; done\ncat "$last/out.txt"\ncat "$last/stderr.txt" >&2 2>/dev/null\n[ -f "$last/pid" ] && { echo $$ > "$last/pid"; exec sleep 600; }\nexit "$(cat "$last/code" 2>/dev/null || echo 0)"\n',
  { mode: 0o755 },
)

function buildDir(name: string, out: string, extra: Record<string, string> = {}): string {
  const d = join(dir, name)
  mkdirSync(d, { recursive: true })
  writeFileSync(join(d, 'out.txt'), out)
  for (const [file, text] of Object.entries(extra)) writeFileSync(join(d, file), text)
  return d
}

/** Waits for a state by polling it: a file written, a process gone. */
async function until(state: () => boolean): Promise<void> {
  while (!state()) await new Promise((resolve) => setTimeout(resolve, 20))
}

describe('kustomize builds through lanes', () => {
  it('gives each of many concurrent builds its own output and status, and passes the flags before the directory', async () => {
    const k = kustomizeAt(fake, [])
    const dirs = Array.from({ length: 12 }, (_, i) =>
      buildDir(`many-${i}`, `kind: ConfigMap # ${i}\n`, i % 3 === 0 ? { code: '1', 'stderr.txt': `Error: broken ${i}` } : {}),
    )
    const results = await Promise.all(dirs.map((d) => k.build(d)))
    results.forEach((r, i) => {
      if (i % 3 === 0) expect(r).toEqual({ ok: false, error: `broken ${i}` })
      else expect(r).toEqual({ ok: true, output: `kind: ConfigMap # ${i}\n` })
    })
    const args = join(dir, 'args')
    writeFileSync(join(dir, 'print-args'), `#!/bin/sh\necho "$@"\n`, { mode: 0o755 })
    expect(await kustomizeAt(join(dir, 'print-args'), []).build(args)).toEqual({ ok: true, output: `build --load-restrictor LoadRestrictionsNone ${args}\n` })
    expect(await kustomizeAt(join(dir, 'print-args'), ['kustomize']).build(args)).toEqual({
      ok: true,
      output: `kustomize --load-restrictor LoadRestrictionsNone ${args}\n`,
    })
  })

  it('keeps exit codes without a message, and output with spaces and odd bytes in the path, exactly', async () => {
    const k = kustomizeAt(fake, [])
    expect(await k.build(buildDir('silent', '', { code: '3' }))).toEqual({ ok: false, error: 'exit 3' })
    const odd = buildDir('a dir with spaces, $HOME and \\ quotes"', 'data:\n  a: "é\u0000"\n')
    expect(await k.build(odd)).toEqual({ ok: true, output: 'data:\n  a: "é\u0000"\n' })
  })

  it('builds a directory whose name holds a newline directly, with the same result', async () => {
    const k = kustomizeAt(fake, [])
    expect(BuildLanes.carries(join(dir, 'new\nline'))).toBe(false)
    expect(await k.build(buildDir('new\nline', 'kind: Secret\n'))).toEqual({ ok: true, output: 'kind: Secret\n' })
  })

  it('refuses an output over the limit', async () => {
    const lanes = new BuildLanes([fake], { PATH: process.env.PATH ?? '' }, 1_000)
    expect(await lanes.run(buildDir('small', 'x'.repeat(1_000)), undefined)).toMatchObject({ kind: 'exited', code: 0 })
    expect(await lanes.run(buildDir('big', 'x'.repeat(5_000)), undefined)).toEqual({ kind: 'overflow' })
  })

  it('stops the running build on abort, and the next build still runs', async () => {
    const k = kustomizeAt(fake, [])
    const hanging = buildDir('hanging', '', { pid: '' })
    const controller = new AbortController()
    const result = k.build(hanging, { signal: controller.signal })
    await until(() => readFileSync(join(hanging, 'pid'), 'utf8').trim() !== '')
    const pid = Number(readFileSync(join(hanging, 'pid'), 'utf8'))
    controller.abort()
    expect(await result).toEqual({ ok: false, error: 'the build was cancelled' })
    await until(() => !alive(pid))
    expect(await k.build(buildDir('after', 'ok\n'))).toEqual({ ok: true, output: 'ok\n' })
  })

  it('never keeps the process alive, and an ended lane leaves no directory behind', async () => {
    const temp = mkdtempSync(join(dir, 'tmp-'))
    const script = join(dir, 'one-build.ts')
    const module = fileURLToPath(new URL('../../src/kustomize/kustomize.ts', import.meta.url))
    writeFileSync(
      script,
      `import { kustomizeAt } from ${JSON.stringify(module)}\n` +
        `const r = await kustomizeAt(${JSON.stringify(fake)}, []).build(${JSON.stringify(buildDir('child', 'done\n'))})\n` +
        'process.stdout.write(JSON.stringify(r))\n',
    )
    const child = spawn(process.execPath, ['--experimental-strip-types', '--no-warnings', script], { env: { ...process.env, TMPDIR: temp } })
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    // Exiting at all is the check: a lane that held the process would hang here (the test timeout).
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    expect({ code, out: JSON.parse(out) as unknown }).toEqual({ code: 0, out: { ok: true, output: 'done\n' } })
    await until(() => readdirSync(temp).length === 0)
    expect(existsSync(temp)).toBe(true)
  })
})

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
