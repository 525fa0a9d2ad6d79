// The watch image as the Dockerfile lays it out: the files it copies, at the paths it names,
// started the way its ENTRYPOINT starts them. No container runtime here, so the layout is made
// in a scratch directory with nothing around it, as in the image.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { DOCKERFILE, imageEntrypoint } from '../../test/support/image.ts'

const scratch = mkdtempSync(join(tmpdir(), 'hrt-image-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The COPY instructions' sources and destinations (flags such as --chmod left out). */
function copies(text: string): { from: string; to: string }[] {
  return [...text.matchAll(/^COPY\s+(.*)$/gm)].map((match) => {
    const words = (match[1] ?? '').split(/\s+/).filter((w) => w !== '' && !w.startsWith('--'))
    return { from: words[0] ?? '', to: words.at(-1) ?? '' }
  })
}

describe('the watch image', () => {
  it('starts its CLI as an ES module without Node guessing the module type (a guess compiles the bundle twice)', () => {
    const words = imageEntrypoint()
    expect(words[0]).toBe('node')
    const script = words.at(-1) ?? ''
    const copied = copies(DOCKERFILE).find((c) => c.to === script)
    expect(copied?.from).toBe('dist/cli.js')

    const inImage = join(scratch, script)
    mkdirSync(join(inImage, '..'), { recursive: true })
    copyFileSync(join(REPO_ROOT, copied?.from ?? ''), inImage)
    // With detection off, an ES module Node has to guess at fails to load: this one must not need the guess.
    const help = execFileSync(process.execPath, ['--no-experimental-detect-module', ...words.slice(1, -1), inImage, '--help'], { encoding: 'utf8' })
    expect(help).toMatch(/^Usage: helmrelease-trigger /)
  })
})
