// What the GitHub Actions runner would take as workflow commands in a step's output, modelled on
// its documented parsing: output is read line by line (split on \n, \r and \r\n); a line whose
// trimmed text starts with `::` is a command (`::name props::data`), and the legacy form
// `##[name props]data` counts anywhere in a line.

export interface WorkflowCommand {
  readonly form: 'v2' | 'legacy'
  readonly name: string
  readonly line: string
}

/** Whitespace that .NET's String.Trim removes (Char.IsWhiteSpace). */
const DOTNET_WHITESPACE = /^[\s\u0085\u180e]+|[\s\u0085\u180e]+$/gu

export function workflowCommands(output: string): WorkflowCommand[] {
  const found: WorkflowCommand[] = []
  for (const line of output.split(/\r\n|\r|\n/)) {
    const trimmed = line.replace(DOTNET_WHITESPACE, '')
    if (trimmed.startsWith('::')) {
      const end = trimmed.indexOf('::', 2)
      if (end > 2) found.push({ form: 'v2', name: trimmed.slice(2, end).split(' ')[0] ?? '', line })
      continue
    }
    for (let at = line.indexOf('##['); at >= 0; at = line.indexOf('##[', at + 3)) {
      const close = line.indexOf(']', at + 3)
      if (close > at + 3) found.push({ form: 'legacy', name: line.slice(at + 3, close).split(' ')[0] ?? '', line })
    }
  }
  return found
}
