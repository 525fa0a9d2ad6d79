// The corpus chart demo: the tests' own chart (test/support/chart.ts).

import { chartFiles, DEMO_CONFIGMAP_TEMPLATE } from '../chart.ts'
import type { CorpusChart } from './corpus.ts'

export const demo: CorpusChart = {
  name: 'demo',
  files: chartFiles({ name: 'demo', version: '0.3.0', values: { greeting: 'hello', count: 2 }, templates: { 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE } }).map(
    ({ path, content }) => [path.slice('demo/'.length), content] as const,
  ),
  releases: [
    { name: 'defaults' },
    { name: 'overridden', values: { greeting: 'hi', enabled: true, ratio: 0.25, big: 1500000, nested: { a: 'b' }, list: ['x', 'y'] } },
  ],
}
