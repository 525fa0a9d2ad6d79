// The event payload reader: the fields range resolution and the pull-request policy use, checked.

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigurationError } from '../../../src/lib/errors.ts'
import { readEvent } from '../../../src/github/event.ts'

const A = 'a'.repeat(40)
const B = 'b'.repeat(40)

describe('readEvent', () => {
  const dirs: string[] = []
  afterAll(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })))
  })

  async function eventFile(content: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'hrt-event-'))
    dirs.push(dir)
    const path = join(dir, 'event.json')
    await writeFile(path, content)
    return path
  }

  it('gives an empty event without a path or a file', async () => {
    expect(await readEvent(undefined)).toEqual({})
    expect(await readEvent('')).toEqual({})
    expect(await readEvent(join(tmpdir(), 'hrt-no-such-dir', 'event.json'))).toEqual({})
  })

  it('keeps the push fields it uses and drops the rest', async () => {
    const path = await eventFile(JSON.stringify({ ref: 'refs/heads/main', before: A, after: B, deleted: false, commits: [{ id: B }] }))
    expect(await readEvent(path)).toEqual({ before: A, after: B, deleted: false })
  })

  it('keeps the pull request SHAs and number', async () => {
    const payload = { action: 'synchronize', number: 3, pull_request: { number: 3, base: { ref: 'main', sha: A }, head: { ref: 'x', sha: B } } }
    expect(await readEvent(await eventFile(JSON.stringify(payload)))).toEqual({
      pull_request: { number: 3, base: { sha: A }, head: { sha: B }, fromFork: true },
    })
  })

  it('refuses a pull request number that is not a positive whole number', async () => {
    const payload = { pull_request: { number: '3', base: { sha: A }, head: { sha: B } } }
    await expect(readEvent(await eventFile(JSON.stringify(payload)))).rejects.toThrow("'pull_request.number' must be a positive whole number")
  })

  it.each([
    ['same repository', 'acme/fleet', 'acme/fleet', false],
    ['a fork', 'someone/fleet', 'acme/fleet', true],
    ['a deleted head repository', null, 'acme/fleet', true],
  ])('tells a pull request from %s', async (_, head, base, fromFork) => {
    const payload = { pull_request: { base: { sha: A, repo: { full_name: base } }, head: { sha: B, repo: head === null ? null : { full_name: head } } } }
    expect((await readEvent(await eventFile(JSON.stringify(payload)))).pull_request?.fromFork).toBe(fromFork)
  })

  it('accepts null for absent fields', async () => {
    expect(await readEvent(await eventFile('{"before": null, "pull_request": null}'))).toEqual({})
  })

  it('names the file when it is not JSON', async () => {
    const path = await eventFile('{"before": ')
    const error = await readEvent(path).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(String(error)).toContain(`the event payload ${path} is not valid JSON`)
    expect(error).toHaveProperty('cause', expect.any(SyntaxError))
  })

  it('rejects JSON that is not an object', async () => {
    await expect(readEvent(await eventFile('[1, 2]'))).rejects.toThrow(/is not a JSON object/)
    await expect(readEvent(await eventFile('null'))).rejects.toThrow(/is not a JSON object/)
  })

  it('names the field with the wrong type', async () => {
    const path = await eventFile('{"before": 42}')
    await expect(readEvent(path)).rejects.toThrow(`the event payload ${path}: 'before' must be a string`)
    await expect(readEvent(await eventFile('{"deleted": "yes"}'))).rejects.toThrow(`'deleted' must be true or false`)
    await expect(readEvent(await eventFile('{"pull_request": {"base": {"sha": "a"}}}'))).rejects.toThrow(`'pull_request.head.sha' must be a commit SHA`)
    await expect(readEvent(await eventFile('{"pull_request": "x"}'))).rejects.toThrow(`'pull_request.base.sha' must be a commit SHA`)
  })

  it('fails, naming the path, when the path cannot be read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hrt-event-'))
    dirs.push(dir)
    await expect(readEvent(dir)).rejects.toThrow(`cannot read the event payload ${dir}`)
  })
})
