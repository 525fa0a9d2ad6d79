// No circular imports in src/, type imports included: a cycle means two modules are one
// concern split in two, or a shared piece sits in the wrong one. Run by `npm run lint`.
// Usage: node scripts/lint/cycles.mjs [dir]   (default src)
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import ts from 'typescript'

/** Every .ts file under `dir` → the .ts files under `dir` it imports (static, type-only, re-export or dynamic). */
export function importGraph(dir) {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => resolve(e.parentPath, e.name))
  const known = new Set(files)
  const graph = new Map()
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => resolve(dirname(file), name))
    graph.set(file, [...new Set(targets.filter((t) => known.has(t)))].sort())
  }
  return graph
}

/** Each cycle once, as the path that closes it (Tarjan's strongly connected components). */
export function findCycles(graph) {
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const components = []
  let next = 0
  const visit = (node) => {
    index.set(node, next)
    low.set(node, next++)
    stack.push(node)
    onStack.add(node)
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(node, Math.min(low.get(node), low.get(to)))
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)))
    }
    if (low.get(node) !== index.get(node)) return
    const component = []
    let member
    do {
      member = stack.pop()
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) components.push(component)
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node)
  return components.map((component) => cycleIn(graph, new Set(component)))
}

/** One closed path through a strongly connected component, from its first file in code-unit order. */
function cycleIn(graph, members) {
  const start = [...members].sort()[0]
  const path = [start]
  const seen = new Set([start])
  for (let node = start; ;) {
    const to = (graph.get(node) ?? []).filter((t) => members.has(t))
    const back = to.find((t) => t === start)
    if (back !== undefined && path.length > 1) return [...path, start]
    const fresh = to.find((t) => !seen.has(t))
    if (fresh === undefined) return [...path, back ?? to[0]]
    path.push(fresh)
    seen.add(fresh)
    node = fresh
  }
}

const isMain = process.argv[1] !== undefined && import.meta.filename === resolve(process.argv[1])
if (isMain) {
  const dir = resolve(process.argv[2] ?? 'src')
  const cycles = findCycles(importGraph(dir))
  for (const cycle of cycles) console.error(`circular import: ${cycle.map((f) => relative(process.cwd(), f)).join(' → ')}`)
  if (cycles.length > 0) {
    console.error(
      `${cycles.length} circular import${cycles.length === 1 ? '' : 's'} in ${relative(process.cwd(), dir) || '.'}: move the shared piece into a module both import.`,
    )
    process.exit(1)
  }
}
