// The product's sandbox for tests: one per test file (each holds worker threads and a compiled
// module), and a wrapper that records which builds were asked of it.

import type { BuildRequest } from '../../src/sandbox/protocol.ts'
import { createSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/sandbox.ts'

/** A sandbox that records the spec.path of each build asked of it. */
export function countingSandbox(options: SandboxOptions = {}): Sandbox & { readonly builds: string[] } {
  const inner = createSandbox(options)
  const builds: string[] = []
  return {
    builds,
    build: (request: BuildRequest, files) => {
      builds.push(request.path)
      return inner.build(request, files)
    },
    postBuild: (request) => inner.postBuild(request),
    helmTemplate: (request, files) => inner.helmTemplate(request, files),
    chartVersion: (request) => inner.chartVersion(request),
    warm: () => inner.warm(),
    close: () => inner.close(),
  }
}
