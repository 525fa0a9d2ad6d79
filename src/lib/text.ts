// Text for people: table columns, markdown cells, file locations.

/** `file:line`, or the file alone when the line is unknown. */
export function location<P extends { readonly file: string; readonly line?: number | undefined }>(p: P): string {
  return p.line === undefined ? p.file : `${p.file}:${p.line}`
}

/** Rows padded into aligned columns (the last column unpadded). */
export function columns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? []
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  '))
}

/** Text made safe for one markdown table cell. */
export function cell(text: string): string {
  return text
    .replace(/\|/g, '\\|')
    .replace(/\r\n|\r|\n/g, ' ')
    .replace(/</g, '&lt;')
}

/**
 * Text as inline code that is safe in a markdown table cell: the fence is longer than any run
 * of backticks inside, `|` is escaped (GFM splits cells before it reads code spans), and line
 * breaks become spaces. `<` stays as it is: inside code it is shown, never read as HTML.
 */
export function code(text: string): string {
  const flat = text.replace(/\r\n|\r|\n/g, ' ').replace(/\|/g, '\\|')
  const longest = Math.max(0, ...[...flat.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = '`'.repeat(longest + 1)
  const pad = flat.startsWith('`') || flat.endsWith('`') || (flat.startsWith(' ') && flat.endsWith(' ') && flat.trim() !== '') ? ' ' : ''
  return `${fence}${pad}${flat}${pad}${fence}`
}
