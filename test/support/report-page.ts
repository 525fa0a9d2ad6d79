// The report as a person sees it on GitHub: Markdown documents (the job summary, the check run,
// the pull-request comment) rendered as GitHub-flavoured Markdown (marked) and laid out by a
// real browser (Debian's Chromium, headless, offline). For the rendering tests and the demo's
// screenshot.

import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { marked } from 'marked'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Where on GitHub → its Markdown. */
export type ReportDocuments = Readonly<Record<string, string>>

export interface ReportPage {
  readonly page: Page
  /** Lays the documents out, one bordered section each, titled with where they appear. */
  show(documents: ReportDocuments): Promise<void>
  screenshot(path: string): Promise<void>
  close(): Promise<void>
}

const STYLE = `body{font:14px -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#1f2328}
section{border:1px solid #d1d9e0;border-radius:6px;padding:8px 16px;margin-bottom:24px}
h1.where{font-size:12px;text-transform:uppercase;color:#59636e;margin:0 0 8px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d1d9e0;padding:4px 10px;vertical-align:top;max-width:520px}
th{background:#f6f8fa}code{background:#eff1f3;border-radius:4px;padding:1px 4px;font-size:12px}`

/** Starts the browser; throws a sentence naming the fix when Chromium is not installed. */
export async function openReportPage(): Promise<ReportPage> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium).`)
  const profile = mkdtempSync(join(tmpdir(), 'hrt-chromium-'))
  let context: BrowserContext | undefined
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
      viewport: { width: 1400, height: 900 },
    })
    const page = context.pages()[0] ?? (await context.newPage())
    // Nothing leaves loopback: the page is built in memory.
    await page.route('**/*', (route) => (route.request().url().startsWith('data:') ? route.continue() : route.abort()))
    const opened = context
    return {
      page,
      async show(documents) {
        const sections = await Promise.all(
          Object.entries(documents).map(
            async ([where, markdown]) =>
              `<section data-where="${where}"><h1 class="where">${where}</h1>${await marked.parse(markdown, { gfm: true })}</section>`,
          ),
        )
        await page.setContent(`<!doctype html><html><head><meta charset="utf-8"><style>${STYLE}</style></head><body>${sections.join('\n')}</body></html>`)
      },
      async screenshot(path) {
        await page.screenshot({ path, fullPage: true })
      },
      async close() {
        await opened.close()
        rmSync(profile, { recursive: true, force: true })
      },
    }
  } catch (error) {
    await context?.close()
    rmSync(profile, { recursive: true, force: true })
    throw error
  }
}
