// Text for people: table columns, markdown cells, file locations.

import { oneLine } from './untrusted.ts'

/** `file:line`, or the file alone when the line is unknown. */
export function location<P extends { readonly file: string; readonly line?: number | undefined }>(p: P): string {
  return p.line === undefined ? p.file : `${p.file}:${p.line}`
}

/** Rows padded into aligned columns (the last column unpadded). */
export function columns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? []
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  '))
}

/** Longest text put into one markdown cell or line. */
export const MAX_CELL = 1000

/**
 * Characters markdown (GFM) gives a meaning to, as numeric references: emphasis, code spans, links
 * and images, headings, tables, HTML, escapes, strikethrough, and the `:`/`@` of autolinks.
 */
const MARKDOWN = /[&<>"'`*_[\]()!#~|\\:@]/g

/**
 * Untrusted text made inert in a markdown cell or line: no line break (CommonMark also ends a line
 * at a lone CR), no markup, no autolink, controls and bidi marks shown as escapes, capped; and no
 * mention or reference GitHub would act on (see unlinked).
 */
export function cell(text: string): string {
  return unlinked(inert(text))
}

/**
 * Untrusted text shown as code: `<code>` around the escaped text (a backtick in it cannot end the
 * span). GitHub resolves no mention or reference inside code.
 */
export function code(text: string): string {
  return `<code>${inert(text)}</code>`
}

function inert(text: string): string {
  return oneLine(text, MAX_CELL)
    .replace(/\u23ce/g, ' ') // ⏎ escaped: one non-Latin-1 character in the bundle doubles its in-memory source
    .replace(MARKDOWN, (ch) => `&#${ch.charCodeAt(0)};`)
    .replace(/www\./gi, (w) => `${w.slice(0, 3)}&#46;`)
}

const ZERO_WIDTH_SPACE = '\u200b'

/**
 * GitHub resolves @mentions (people, `org/team`) and references (`#26`, `owner/repo#26`, `GH-26`)
 * on the rendered text, after character references are decoded: `&#64;org/team` still notifies.
 * A zero-width space after each `@` and `#`, and inside `GH-`, leaves nothing their patterns match
 * (GitHub's documented forms; the mention pattern of github/html-pipeline's MentionFilter).
 */
function unlinked(escaped: string): string {
  return escaped.replace(/&#(64|35);/g, `&#$1;${ZERO_WIDTH_SPACE}`).replace(/\b(GH)-/gi, `$1${ZERO_WIDTH_SPACE}-`)
}

/** `1 release`, `2 releases`. */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}

/** A fail-on verdict, one sentence for every mode: the head (given the count), the first five, "and N more". */
export function failureSentence(problems: readonly string[], head: (count: number) => string): string | undefined {
  if (problems.length === 0) return undefined
  const more = problems.length > 5 ? ` and ${problems.length - 5} more` : ''
  return `${head(problems.length)}: ${problems.slice(0, 5).join('; ')}${more}`
}
