// Generated hostile text (line breaks of every kind, `::` commands, `##[`, backticks, pipes,
// `<script>`, bidi marks, long runs) through the paths that print or render it: log lines, the
// watch log, a summary table, JSON outputs. 0 workflow commands, 0 broken tables, JSON lossless.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { cell, code } from '../../../src/lib/text.ts'
import { jsonText, logLine, logText } from '../../../src/lib/untrusted.ts'
import { createEventLog } from '../../../src/modes/watch/log.ts'
import { render } from '../../../test/support/markdown.ts'
import { workflowCommands } from '../../../test/support/workflow-commands.ts'

const FRAGMENTS = [
  '\n',
  '\r',
  '\r\n',
  '\u2028',
  '\u0085',
  '::',
  '::add-mask::x',
  '::stop-commands::t',
  '##[',
  '##[error]x',
  '`',
  '```',
  '|',
  '\\|',
  '<script>alert(1)</script>',
  '\u202e',
  '\u2066',
  '\u200f',
  '\u001b[31m',
  '**',
  '_',
  '[a](https://e.example)',
  '# ',
  '&amp;',
  ' ',
  'a',
  'é',
  '😀',
  '\t',
  '\ud800',
]
const hostile = fc.array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 8 })), { maxLength: 40 }).map((parts) => parts.join(''))

describe('hostile text', () => {
  it('log lines and multi-line text: no workflow command survives (2,000 cases)', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        expect(workflowCommands(logLine(text))).toEqual([])
        expect(workflowCommands(logText(`${text}\n${text}\n`))).toEqual([])
      }),
      { numRuns: 2_000 },
    )
  })

  it('the watch log, text and JSON: one line each, no command, JSON that parses back (1,000 cases)', () => {
    fc.assert(
      fc.property(hostile, fc.constantFrom('text' as const, 'json' as const), (text, format) => {
        const lines: string[] = []
        createEventLog(format, { write: (_, line) => lines.push(logLine(line)) }, () => 0).event('warning', 'source annotation ignored', {
          source: text,
          problem: text,
        })
        expect(lines).toHaveLength(1)
        expect(workflowCommands(lines[0] ?? '')).toEqual([])
        if (format === 'json') expect(JSON.parse(lines[0] ?? '')).toMatchObject({ msg: 'source annotation ignored' })
      }),
      { numRuns: 1_000 },
    )
  })

  it('a summary table with hostile cells: every row whole, no heading, link, emphasis or HTML but ours (1,000 cases)', () => {
    fc.assert(
      fc.property(hostile, hostile, (a, b) => {
        const md = ['## ours', '', '| A | B | C |', '| --- | --- | --- |', `| ${code(a)} | ${cell(b)} | x |`, `| ${cell(a)} | ${code(b)} | y |`, ''].join('\n')
        const shown = render(md)
        expect(shown.headings).toEqual(['ours'])
        expect(shown.tables).toHaveLength(1)
        expect(shown.tables[0]?.widths).toEqual([3, 3])
        expect(shown.tables[0]?.rows.map((r) => r[2])).toEqual(['x', 'y'])
        for (const kind of ['strong', 'em', 'link', 'image', 'del', 'script']) expect(shown.markup.get(kind), kind).toBeUndefined()
      }),
      { numRuns: 1_000 },
    )
  })

  it('JSON for stdout is lossless and starts no command (1,000 cases), also for a 1 MB line', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const json = jsonText({ text }, 2)
        expect(JSON.parse(json)).toEqual({ text })
        expect(workflowCommands(json)).toEqual([])
      }),
      { numRuns: 1_000 },
    )
    const big = `${'##[warning]'.repeat(100_000)}\n::add-mask::x`
    expect(workflowCommands(jsonText({ big }))).toEqual([])
    expect(workflowCommands(logLine(big))).toEqual([])
  })
})
