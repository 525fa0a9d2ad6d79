// Untrusted text never becomes a workflow command or a terminal control: the audit's F1
// reproducers (a fork's YAML name carrying `::add-mask::`/`::stop-commands::` after newlines, and
// the legacy `##[` form mid-line) run through the CLI against a real repository, and the one
// sanitiser every printed line passes through is checked on its own.

import { describe, expect, it } from 'vitest'
import { main, type CliIo } from '../../src/entry/cli.ts'
import { jsonText, logLine, logText, oneLine, plainText, MAX_TEXT } from '../../src/lib/untrusted.ts'
import { createEventLog } from '../../src/modes/watch/log.ts'
import { createRepo } from '../../test/support/repo.ts'
import { workflowCommands } from '../../test/support/workflow-commands.ts'

const INJECTED_NAME =
  'bad\n::add-mask::helmrelease\n::error file=README.md,line=1,title=Security::Injected annotation\n::set-output name=findings::[]\n::stop-commands::deadbeef'

function recordingIo(cwd: string): CliIo & { readonly all: () => string } {
  const printed: string[] = []
  return { out: (t) => printed.push(t), err: (t) => printed.push(t), env: {}, cwd, all: () => printed.join('') }
}

async function discoverFromGit(name: string, json = false): Promise<string> {
  const repo = createRepo()
  try {
    repo.write({ 'cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${JSON.stringify(name)}\n` })
    repo.commit('from a fork')
    const io = recordingIo(repo.dir)
    await main(['discover', '--from-git', ...(json ? ['--json'] : [])], io)
    return io.all()
  } finally {
    repo.cleanup()
  }
}

describe('F1: the audit reproducers through the CLI (discover --from-git on a fork-controlled repository)', () => {
  it('repro 1: newlines in metadata.name start no ::add-mask::, ::error, ::set-output or ::stop-commands::', async () => {
    const printed = await discoverFromGit(INJECTED_NAME)
    expect(printed).toContain('add-mask') // the text is still shown, only defused
    expect(workflowCommands(printed)).toEqual([])
  })

  it('repro 2: the legacy ##[ form mid-line is defused', async () => {
    const printed = await discoverFromGit('no newline needed ##[warning]Injected via the legacy ##[ form')
    expect(printed).toContain('Injected via the legacy')
    expect(workflowCommands(printed)).toEqual([])
  })

  it('--json stays valid JSON that decodes to the same text (the quoted name with its bidi mark shown), and starts no command either', async () => {
    const name = 'x ##[warning]y \u202e z'
    const printed = await discoverFromGit(name, true)
    expect(workflowCommands(printed)).toEqual([])
    const json = printed.slice(printed.indexOf('{'), printed.lastIndexOf('}') + 1)
    // A problem quotes repository content on one line, a bidi control written as its escape.
    expect((JSON.parse(json) as { findings: { message: string }[] }).findings.map((f) => f.message).join('\n')).toContain("'x ##[warning]y \\u202e z'")
  })
})

describe('the sanitiser', () => {
  it.each([
    ['LF', 'a\n::add-mask::x'],
    ['CR alone', 'a\r::stop-commands::x'],
    ['CRLF', 'a\r\n::error::x'],
    ['NEL, LS and PS', 'a\u0085::error::x\u2028::error::y\u2029::error::z'],
    ['a leading ::', '::add-mask::x'],
    ['a leading :: after spaces and a BOM', ' \t\ufeff::add-mask::x'],
    ['##[ anywhere', 'text ##[error]x'],
    ['##[ twice', '##[group]a ##[endgroup]'],
  ])('%s: no workflow command survives', (_, text) => {
    expect(workflowCommands(logLine(text))).toEqual([])
    expect(workflowCommands(logText(`safe\n${text}\n`))).toEqual([])
  })

  it('escapes terminal controls and bidi marks visibly, keeps tabs and ordinary text', () => {
    expect(oneLine('red \u001b[31m x')).toBe('red \\u001b[31m x')
    expect(oneLine('admin\u202e\u2066txt.exe')).toBe('admin\\u202e\\u2066txt.exe')
    expect(oneLine('a\tb ünïcode ✅ std::string')).toBe('a\tb ünïcode ✅ std::string')
    expect(oneLine('two\nlines')).toBe('two⏎lines')
    expect(plainText('two\r\nlines\rthree')).toBe('two\nlines\nthree')
  })

  it('caps a 1 MB value with a note of how much was left out, never splitting a surrogate pair', () => {
    const line = oneLine('y'.repeat(1_000_000))
    expect(line.length).toBeLessThan(MAX_TEXT + 40)
    expect(line).toContain(`… (${1_000_000 - MAX_TEXT} more characters)`)
    const emoji = oneLine(`${'a'.repeat(MAX_TEXT - 1)}😀tail`)
    expect(emoji).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
  })

  it('jsonText is lossless', () => {
    const value = { m: 'a ##[b] \u2028 \u202e \n c' }
    expect(JSON.parse(jsonText(value, 2))).toEqual(value)
    expect(workflowCommands(jsonText(value, 2))).toEqual([])
  })
})

describe('watch logs', () => {
  it.each(['text', 'json'] as const)('%s: field values from the cluster start no command and never split a line', (format) => {
    const lines: string[] = []
    const log = createEventLog(format, { write: (_, line) => lines.push(line) }, () => 0)
    log.event('info', 'release skipped', { release: 'apps/web', detail: 'x\r::add-mask::y ##[warning]z \u202e', big: 'q'.repeat(100_000) })
    expect(lines).toHaveLength(1)
    const [line = ''] = lines
    expect(line.split(/\r\n|\r|\n/)).toHaveLength(1)
    expect(workflowCommands(line)).toEqual([])
    expect(line.length).toBeLessThan(5000)
    if (format === 'json') expect(JSON.parse(line)).toMatchObject({ release: 'apps/web' })
  })
})
