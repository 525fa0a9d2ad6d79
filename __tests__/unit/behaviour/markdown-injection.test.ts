// The job summary quotes file paths and YAML values from a fork's pull request: the audit's F5
// reproducer (a backtick closing the code span, a lone CR starting a heading and a link) runs
// through the real planner, and the summary is rendered by a GFM renderer (marked) to check what
// a reader would see: only our own headings, no link, no emphasis, every table row whole.

import { describe, expect, it } from 'vitest'
import { parseSettings } from '../../../src/settings.ts'
import { runTrigger } from '../../../src/modes/trigger/pipeline.ts'
import { summaryMarkdown } from '../../../src/modes/trigger/report.ts'
import { FakeCluster, FakeClock, FakeGit } from '../../../test/support/fakes.ts'
import { render } from '../../../test/support/markdown.ts'
import { clusterRefused } from '../../../src/github/policy.ts'

const FILE = 'apps/cm` **Reviewed and APPROVED by the security team** `.yaml'
const NAME = 'x\r## helmrelease-trigger: 0 problems ✅ all good\r[Open the deploy approval page](https://attacker.example/approve)\r'

const configMap = (name: string, value: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${JSON.stringify(name)}
  namespace: apps
  labels: {nebius.ai/helmrelease-trigger-operator: "true"}
  annotations: {nebius.ai/helmreleases-name: web, nebius.ai/helmreleases-namespace: apps}
data: {values.yaml: ${JSON.stringify(value)}}
`

async function forkPlanSummary(): Promise<string> {
  const git = new FakeGit()
    .commit('a', undefined, {})
    .commit('b', 'a', { [FILE]: configMap('web-values', 'replicas: 2'), 'apps/bad.yaml': configMap(NAME, 'x') })
  const event = { pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork: true } }
  const report = await runTrigger(
    parseSettings(() => ''),
    { eventName: 'pull_request', event, sha: 'b', runUrl: undefined, refused: clusterRefused('pull_request', event, false) },
    { git, connect: async () => new FakeCluster(), clock: new FakeClock(), log: { info: () => undefined, warning: () => undefined } },
  )
  return summaryMarkdown(report)
}

describe('F5: summary markdown from a fork pull request', () => {
  it('the audit reproducer: no forged heading, bold text or link; the path shown whole, the name quoted as text and cut', async () => {
    const summary = await forkPlanSummary()
    const shown = render(summary)
    expect(shown.headings).toEqual(['helmrelease-trigger: plan: 1 release would be triggered', 'Plan', 'Releases', 'Values changed', 'Manifest problems'])
    for (const kind of ['strong', 'link', 'image', 'del']) expect(shown.markup.get(kind), kind).toBeUndefined()
    expect(shown.markup.get('em')).toBe(1) // ours: the italic plan-only line
    expect(shown.tables.flatMap((t) => t.widths.map((w) => w - t.header.length))).toEqual(shown.tables.flatMap((t) => t.widths.map(() => 0)))
    expect(shown.tables[0]?.rows[0]?.[3]).toBe(`${FILE}:1`)
    // A problem quotes at most 100 characters of the repository: shown as text, never a link.
    expect(shown.lines.join('\n')).toContain("[Open the deploy approval page](https://attacker.exa…' (114 characters)")
  })
})
