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
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ').replace(/</g, '&lt;')
}
