// The job summary as GitHub shows it: parsed and rendered by a GFM renderer (marked), so tests
// assert what a reader sees (table cells, headings, links, emphasis), not the raw markdown.

import { Lexer, Parser, type Token, type Tokens } from 'marked'

export interface RenderedTable {
  readonly header: readonly string[]
  readonly rows: readonly (readonly string[])[]
  /** Cells per row as the renderer split them (a broken row has a different count than the header). */
  readonly widths: readonly number[]
}

export interface Rendered {
  readonly headings: readonly string[]
  readonly tables: readonly RenderedTable[]
  /** Markup found anywhere: strong, em, del, link, image, heading, and each HTML tag name. */
  readonly markup: ReadonlyMap<string, number>
  /** Visible text of every block, in order. */
  readonly lines: readonly string[]
}

export function render(markdown: string): Rendered {
  const tokens = new Lexer({ gfm: true }).lex(markdown)
  const markup = new Map<string, number>()
  const count = (kind: string): void => void markup.set(kind, (markup.get(kind) ?? 0) + 1)
  const headings: string[] = []
  const tables: RenderedTable[] = []
  const lines: string[] = []
  const walk = (list: readonly Token[]): void => {
    for (const t of list) {
      if (t.type === 'html') for (const m of t.raw.matchAll(/<\/?([a-zA-Z][\w-]*)/g)) count((m[1] ?? '').toLowerCase())
      if (['strong', 'em', 'del', 'link', 'image', 'heading', 'blockquote', 'list', 'codespan', 'code', 'hr'].includes(t.type)) count(t.type)
      if (t.type === 'heading') headings.push(inlineText((t as Tokens.Heading).tokens))
      if (t.type === 'table') {
        const table = t as Tokens.Table
        tables.push({
          header: table.header.map((c) => inlineText(c.tokens)),
          rows: table.rows.map((r) => r.map((c) => inlineText(c.tokens))),
          widths: table.rows.map((r) => r.length),
        })
        for (const c of [...table.header, ...table.rows.flat()]) walk(c.tokens)
      }
      if (t.type === 'paragraph' || t.type === 'heading') lines.push(inlineText((t as Tokens.Paragraph).tokens))
      if (t.type === 'list') {
        for (const item of (t as Tokens.List).items) {
          lines.push(decode(new Parser().parse([...item.tokens]).replace(/<[^>]*>/g, '')).trim())
          walk(item.tokens)
        }
      } else if ('tokens' in t && Array.isArray(t.tokens) && t.type !== 'table') walk(t.tokens)
    }
  }
  walk(tokens)
  return { headings, tables, markup, lines }
}

/** The rows (visible text) of the table under the heading `title`. */
export function tableUnder(markdown: string, title: string): readonly (readonly string[])[] {
  const tokens = new Lexer({ gfm: true }).lex(markdown)
  const at = tokens.findIndex((t) => t.type === 'heading' && inlineText((t as Tokens.Heading).tokens) === title)
  const table = tokens.slice(at + 1).find((t): t is Tokens.Table => t.type === 'table')
  return at < 0 || table === undefined ? [] : table.rows.map((r) => r.map((c) => inlineText(c.tokens)))
}

/** Visible text of inline tokens: rendered to HTML, tags dropped, references decoded. */
export function inlineText(tokens: readonly Token[]): string {
  return decode(new Parser().parseInline([...tokens]).replace(/<[^>]*>/g, '')).trim()
}

function decode(html: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" }
  return html.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, ref: string) => {
    if (ref.startsWith('#x') || ref.startsWith('#X')) return String.fromCodePoint(parseInt(ref.slice(2), 16))
    if (ref.startsWith('#')) return String.fromCodePoint(Number(ref.slice(1)))
    return named[ref] ?? whole
  })
}
