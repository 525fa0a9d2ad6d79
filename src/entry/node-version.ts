// Imported first by both entries, so it runs before any bundled dependency loads: on an older
// Node the bundle would otherwise die inside undici (client-node's HTTP client, which needs
// Node 22.19: it binds zlib's zstd decompressor at load) and print a screen of minified code.

/** The oldest Node the bundles run on (undici 8's engines field). */
export const MIN_NODE = { major: 22, minor: 19 } as const

/** One sentence when `version` (process.version) is too old, undefined when it will do. */
export function nodeVersionProblem(version: string): string | undefined {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number)
  if (major > MIN_NODE.major || (major === MIN_NODE.major && minor >= MIN_NODE.minor)) return undefined
  const needed = major < MIN_NODE.major ? `${MIN_NODE.major}` : `${MIN_NODE.major}.${MIN_NODE.minor}`
  return `helmrelease-trigger needs Node.js ${needed} or newer (found ${version})`
}

const problem = nodeVersionProblem(process.version)
if (problem !== undefined) {
  // In a workflow step the runner turns this into an error annotation.
  process.stderr.write(process.env['GITHUB_ACTIONS'] === 'true' ? `::error::${problem}\n` : `${problem}\n`)
  process.exit(1)
}
