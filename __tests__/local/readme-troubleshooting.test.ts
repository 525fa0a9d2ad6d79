// The README's troubleshooting is keyed by the messages the code prints: every message a
// bullet there starts with must still be in src/ (its literal parts, between the <…>
// placeholders), so a reworded error cannot leave the README pointing at nothing.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [readFileSync(join(root, dir, e.name), 'utf8')] : [],
  )
}

function troubleshootingMessages(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Troubleshooting'), readme.indexOf('\n## ', readme.indexOf('## Troubleshooting') + 1))
  return [...section.matchAll(/^- `([^`]+)`/gm)].map((m) => m[1] ?? '')
}

/**
 * The literal parts of a documented message: split at placeholders (<…> with what follows it,
 * as in <prefix>/helmreleases-name; …; [...]; dotted names the code assembles, such as
 * helmreleases.helm.toolkit.fluxcd.io) and where the code joins pieces built apart (quotes,
 * '; ', ' (', ': ', '. '); the parts of three words or more.
 */
function literalParts(message: string): string[] {
  return message
    .split(/<[^>]*>[\w./-]*|…|\[\.\.\.\]|\b[\w-]+(?:\.[\w-]+){2,}\b|['"]|; | \(|\)|: |\. /)
    .map((part) => part.trim())
    .filter((part) => part.split(/\s+/).length >= 3)
}

describe('README troubleshooting', () => {
  const code = sources('src').join('\n')
  const messages = troubleshootingMessages()

  it('quotes messages', () => {
    expect(messages.length).toBeGreaterThan(20)
  })

  it.each(messages)('`%s` is printed by src/', (message) => {
    for (const part of literalParts(message)) expect(code, `"${part}" is not in src/: update the README's troubleshooting`).toContain(part)
  })
})
