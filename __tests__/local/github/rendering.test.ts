// What people see: the job summary, the check run and the pull-request comment rendered as
// GitHub-flavoured Markdown (marked) and laid out by a real browser (Debian's Chromium,
// headless). Names with `|`, backticks and `<`, CRLF and 300-character messages must stay in
// their cell, never split a row or turn into HTML. The screenshot is kept in artifacts/ for a
// person to look at.

import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { summaryMarkdown } from '../../../src/modes/trigger/report.ts'
import { triggerVerdict } from '../../../src/modes/trigger/verdict.ts'
import { openReportPage, type ReportDocuments, type ReportPage } from '../../../test/support/report-page.ts'
import { awkwardReport } from '../../../test/support/reports.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const ARTIFACTS = join(import.meta.dirname, '..', '..', '..', 'artifacts')
const RUN = 'https://github.example/acme/fleet/actions/runs/4242'

let browser: ReportPage
let page: Page

beforeAll(async () => {
  browser = await openReportPage()
  page = browser.page
})

afterAll(async () => {
  await browser?.close()
})

const report = awkwardReport()
const verdict = triggerVerdict(report, { failOn: 'error', runUrl: RUN })
const DOCUMENTS = {
  'Job summary': summaryMarkdown(report),
  'Check run': `# ${verdict.title}\n\n${verdict.summary}\n${verdict.text}`,
  'Pull-request comment': verdict.comment,
} as const

async function render(documents: ReportDocuments = DOCUMENTS): Promise<void> {
  await browser.show(documents)
}

interface Table {
  readonly where: string
  readonly header: string[]
  readonly rows: string[][]
}

async function tables(): Promise<Table[]> {
  return page.$$eval('section', (sections) =>
    sections.flatMap((section) =>
      [...section.querySelectorAll('table')].map((table) => ({
        where: section.getAttribute('data-where') ?? '',
        header: [...table.querySelectorAll('thead th')].map((th) => th.textContent ?? ''),
        rows: [...table.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
      })),
    ),
  )
}

describe('GitHub-flavoured Markdown in a real browser', () => {
  it('keeps every awkward name and message inside its own cell, in every place', async () => {
    await render()
    const all = await tables()
    for (const where of Object.keys(DOCUMENTS)) expect(all.some((t) => t.where === where)).toBe(true)
    for (const t of all) {
      for (const row of t.rows) expect(row, `${t.where}: ${t.header.join(' | ')}`).toHaveLength(t.header.length)
    }
    const releases = all.filter((t) => t.header[1] === 'Release')
    expect(releases.map((t) => t.where)).toEqual(['Job summary', 'Check run', 'Pull-request comment'])
    for (const t of releases) {
      const cron = t.rows.find((r) => r[1] === 'apps/cron')
      expect(cron?.[0]).toBe('ConfigMap/apps/a|b`c<d>')
      expect(cron?.[6]).toBe('line one line two with a | pipe and `code` and <b>html</b>')
      const web = t.rows.find((r) => r[1] === 'apps/web')
      // 300 characters of the message, and the zero-width spaces that keep its # and @ from linking.
      expect(web?.[6]?.replace(/\u200b/g, '')).toHaveLength(300)
      expect(web?.[3]).toBe('❌ Failed (UpgradeFailed)')
      expect(web?.[4]).toBe('7 → 8')
    }
    // Messages are text: no element came from a message or a name.
    expect(await page.$$eval('td b', (b) => b.length)).toBe(0)
  })

  it('shows the value changes, a Secret without its values', async () => {
    await render()
    const values = (await tables()).filter((t) => t.header[1] === 'Key')
    expect(values).toHaveLength(3)
    for (const t of values) {
      expect(t.rows).toContainEqual(['ConfigMap/apps/web-values', 'values.yaml → ingress.host', 'added', '—', '"<web>|`prod`.example"'])
      expect(t.rows).toContainEqual(['Secret/apps/db', 'password', 'modified', '(hidden)', '(hidden)'])
    }
  })

  it('shows the plan table of a pull request, and the file names with their line', async () => {
    await render()
    const plan = (await tables()).filter((t) => t.header[0] === 'Source' && t.header[3] === 'File')
    expect(plan).toHaveLength(1)
    expect(plan[0]?.rows.map((r) => r[3])).toContain('clusters/prod/apps/`odd`<name>.yaml:12')
    mkdirSync(ARTIFACTS, { recursive: true })
    await browser.screenshot(join(ARTIFACTS, 'github-report.png'))
    expect(existsSync(join(ARTIFACTS, 'github-report.png'))).toBe(true)
  })
})

/**
 * What GitHub links or notifies in the rendered text of a comment, a summary or a check run, by its
 * documented forms (Basic writing and formatting syntax, "Mentioning people and teams";
 * Autolinked references and URLs, "Issues and pull requests"): `@user`, `@org/team`, `#26`,
 * `GH-26`, `owner/repo#26`. The mention pattern is github/html-pipeline's MentionFilter; like it,
 * text inside `pre`, `code` and `a` is skipped. Applied to the text the browser shows, so a
 * character reference (`&#64;`) counts as what it decodes to.
 */
async function linkedByGitHub(): Promise<string[]> {
  // Run in the page (the project compiles without the DOM's types): every text node outside pre, code and a.
  const texts = (await page.evaluate(`(() => {
    const out = []
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode())
      if (node.parentElement && node.parentElement.closest('pre, code, a') === null) out.push(node.textContent || '')
    return out
  })()`)) as string[]
  const patterns = [
    /(?:^|\W)@([a-z0-9][a-z0-9-]*)(?:\/[a-z0-9][a-z0-9-]*)?(?!\/)(?=\.+[ \t\W]|\.+$|[^0-9a-zA-Z_.]|$)/i,
    /(?:^|[^\w&])#\d+\b/,
    /\bGH-\d+\b/i,
    /\b[\w.-]+\/[\w.-]+#\d+\b/,
  ]
  return texts.filter((t) => patterns.some((p) => p.test(t)))
}

describe('I3: nothing in what we post mentions or references anyone', () => {
  it('names and messages carrying @user, @org/team, #1, GH-2 and owner/repo#3 notify and link no one, in every place', async () => {
    const hostile = 'ping @octocat and @acme/security-team, see #1, GH-2 and acme/fleet#3'
    const report = awkwardReport({ name: `web ${hostile}`, message: `failed: ${hostile}` })
    const verdict = triggerVerdict(report, { failOn: 'error', runUrl: RUN })
    await render({ 'Job summary': summaryMarkdown(report), 'Check run': `${verdict.summary}\n${verdict.text}`, 'Pull-request comment': verdict.comment })
    expect(await page.textContent('body')).toContain('ping @')
    expect(await linkedByGitHub()).toEqual([])
  })
})
