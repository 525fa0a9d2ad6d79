// Types of cycles.mjs for the tests that import it.
export function importGraph(dir: string): Map<string, string[]>
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][]
