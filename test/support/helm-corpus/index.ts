// The charts of the differential test of the sandbox's helmTemplate against the real helm CLI
// (__tests__/render/helm-differential.test.ts), one file each.

import { bundled } from './bundled.ts'
import { capable } from './capable.ts'
import type { CorpusChart } from './corpus.ts'
import { demo } from './demo.ts'
import { functions } from './functions.ts'
import { guarded } from './guarded.ts'
import { ignoring } from './ignoring.ts'
import { migrator } from './migrator.ts'
import { platform } from './platform.ts'
import { webapp } from './webapp.ts'

export { archiveOf, type CorpusChart, type CorpusRelease } from './corpus.ts'

export const HELM_CORPUS: readonly CorpusChart[] = [demo, webapp, migrator, platform, capable, guarded, bundled, functions, ignoring]
