// One order for text everywhere: code-unit order, the same on every machine and in every
// locale (localeCompare is neither).

export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
