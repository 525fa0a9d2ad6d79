// The import direction of src/, as an ESLint rule: lib ← core ← engine ← modes ← entry, with
// the adapters (kube, git, github, sandbox) beside the engine and importing only lib and core.
// A module may always import its own folder. Type imports count too: a type that points the
// wrong way is a piece of the lower layer living in the higher one.
import { dirname, relative, resolve, sep } from 'node:path'

const ADAPTERS = ['kube', 'git', 'github', 'sandbox']

/** What each layer may import besides itself. `modes/<mode>` entries name one mode. */
export const ALLOWED = {
  lib: [],
  core: ['lib'],
  kube: ['lib', 'core'],
  git: ['lib', 'core'],
  github: ['lib', 'core'],
  sandbox: ['lib', 'core'],
  // Rendering a repository as Flux applies it: git content, built in the sandbox.
  render: ['lib', 'core', 'git', 'sandbox'],
  // The one release-write engine and its ports: it writes through the kube adapter.
  engine: ['lib', 'core', ...ADAPTERS],
  // One parser of the inputs; the kubeconfig encodings belong to the kube adapter.
  settings: ['lib', 'core', 'kube'],
  // The Mode contract and the table of modes.
  modes: ['lib', 'core', 'engine', 'render', 'settings', ...ADAPTERS, 'modes/*'],
  'modes/*': ['lib', 'core', 'engine', 'render', 'settings', ...ADAPTERS, 'modes'],
  // Watch mode triggers through trigger's release action and runs recover's periodic pass.
  'modes/watch': ['lib', 'core', 'engine', 'render', 'settings', ...ADAPTERS, 'modes', 'modes/trigger', 'modes/recover'],
  // Fleet mode runs trigger's pipeline on each cluster's part of one plan.
  'modes/fleet': ['lib', 'core', 'engine', 'render', 'settings', ...ADAPTERS, 'modes', 'modes/trigger'],
  entry: ['*'],
}

/** The layer of a repository-relative path under src/; undefined outside src/. */
export function layerOf(path) {
  const parts = path.split(/[\\/]/)
  if (parts[0] !== 'src') return undefined
  if (parts.length === 2) return parts[1] === 'settings.ts' ? 'settings' : 'src'
  if (parts[1] === 'modes') return parts.length === 3 ? 'modes' : `modes/${parts[2]}`
  return parts[1]
}

function allowedFor(layer) {
  return ALLOWED[layer] ?? (layer.startsWith('modes/') ? ALLOWED['modes/*'] : undefined)
}

/** undefined when `from` may import `to`; otherwise the sentence that says why not. */
export function violation(from, to) {
  const a = layerOf(from)
  const b = layerOf(to)
  if (a === undefined || b === undefined || a === b) return undefined
  const allowed = allowedFor(a)
  if (allowed === undefined) return `${from} is outside the layer folders: move it into src/{lib,core,engine,modes/<mode>,entry} or an adapter folder.`
  if (allowed.includes('*') || allowed.includes(b) || (b.startsWith('modes/') && allowed.includes('modes/*'))) return undefined
  const may = allowed.length === 0 ? 'nothing outside its folder' : allowed.join(', ')
  return `${a} may not import ${b} (${to}): ${a} may import ${may}; move the shared piece down to a layer both can import.`
}

const rule = {
  meta: { type: 'problem', docs: { description: 'Imports in src/ follow the layer direction' }, schema: [] },
  create(context) {
    const root = context.cwd
    const from = relative(root, context.filename).split(sep).join('/')
    if (layerOf(from) === undefined) return {}
    const check = (node, source) => {
      if (source === null || source === undefined || source.type !== 'Literal' || typeof source.value !== 'string') return
      if (!source.value.startsWith('.')) return
      const to = relative(root, resolve(dirname(context.filename), source.value))
        .split(sep)
        .join('/')
      const message = violation(from, to)
      if (message !== undefined) context.report({ node: source, message })
    }
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
    }
  },
}

export default { meta: { name: 'layers' }, rules: { direction: rule } }
