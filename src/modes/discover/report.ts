// Reporting of discover: the headline, the job summary, the CLI text, the fail-on verdict and
// the one ModeResult built from them. Consumes the report; never decides.

import { releaseKey } from '../../core/model.ts'
import { cell, code, columns, failureSentence, location, plural } from '../../lib/text.ts'
import type { FailOn } from '../../settings.ts'
import type { Finding } from './lint.ts'
import type { Annotation, ModeResult } from '../mode.ts'
import type { DiscoverReport } from './run.ts'

export function discoverHeadline(report: DiscoverReport): string {
  const count = (s: Finding['severity']): number => report.findings.filter((f) => f.severity === s).length
  const added = report.labels.filter((l) => l.action === 'add' && l.status !== 'failed').length
  const removed = report.labels.filter((l) => l.action === 'remove' && l.status !== 'failed').length
  const failed = report.labels.filter((l) => l.status === 'failed').length
  const labels = report.fromGit
    ? ''
    : `, ${added} labelled, ${removed} unlabelled${failed > 0 ? `, ${failed} label changes failed` : ''}${report.dryRun ? ' (dry run)' : ''}`
  return `${report.releases} HelmReleases in ${report.scope}${labels}; ${count('error')} errors, ${count('warning')} warnings, ${count('notice')} notices`
}

/** Why the run fails under `failOn`, or undefined when it passes. */
export function discoverFailure(report: DiscoverReport, failOn: FailOn): string | undefined {
  if (failOn === 'never') return undefined
  const counted = report.findings.filter((f) => f.severity === 'error' || (failOn === 'warning' && f.severity === 'warning'))
  const all = [
    ...report.labels.filter((l) => l.status === 'failed').map((l) => `${releaseKey(l)}: label ${l.action} failed: ${l.message}`),
    ...counted.map(findingText),
  ]
  return failureSentence(all, (n) => `${plural(n, 'problem')} (fail-on: ${failOn})`)
}

export function findingText(f: Finding): string {
  return f.file === undefined ? f.message : `${location({ severity: f.severity, file: f.file, line: f.line, message: f.message })}: ${f.message}`
}

const MARK: Readonly<Record<Finding['severity'], string>> = { error: '❌', warning: '⚠️', notice: 'ℹ️' }

export function discoverSummary(report: DiscoverReport): string {
  const lines = [`## helmrelease-trigger discover: ${discoverHeadline(report)}`]
  for (const note of report.notes) lines.push('', `> ${cell(note)}`)
  if (report.labels.length > 0) {
    lines.push(
      '',
      '### Labels',
      '',
      '| Release | Change | Result |',
      '| --- | --- | --- |',
      ...report.labels.map((l) => `| ${code(releaseKey(l))} | ${l.action} | ${l.status === 'failed' ? '❌' : '✅'} ${cell(l.message)} |`),
    )
  }
  lines.push('', '### Findings', '')
  if (report.findings.length === 0) lines.push('No findings.')
  else
    lines.push(
      '| | Finding | Where | Details |',
      '| --- | --- | --- | --- |',
      ...report.findings.map(
        (f) =>
          `| ${MARK[f.severity]} | ${f.code} | ${f.file === undefined ? '—' : `${code(`${f.file}${f.line === undefined ? '' : `:${f.line}`}`)}`} | ${cell(f.message)} |`,
      ),
    )
  return `${lines.join('\n')}\n`
}

export function discoverText(report: DiscoverReport): string {
  const out = [`helmrelease-trigger discover: ${discoverHeadline(report)}`, ...report.notes.map((n) => `note: ${n}`)]
  if (report.labels.length > 0)
    out.push('', ...columns([['RELEASE', 'LABEL', 'RESULT', 'DETAILS'], ...report.labels.map((l) => [releaseKey(l), l.action, l.status, l.message])]))
  if (report.findings.length > 0) out.push('', ...report.findings.map((f) => `${f.severity}: ${f.code}: ${findingText(f)}`))
  return `${out.join('\n')}\n`
}

/** Discover's result for the action and the CLI (--json prints the whole report). */
export function discoverResult(report: DiscoverReport, failOn: FailOn): ModeResult {
  return {
    headline: `helmrelease-trigger discover: ${discoverHeadline(report)}`,
    log: [
      ...report.labels.map((l) => `  ${l.namespace}/${l.name}: label ${l.action} ${l.status}: ${l.message}`),
      ...report.findings.map((f) => `  ${f.severity}: ${findingText(f)}`),
    ],
    outputs: { findings: JSON.stringify(report.findings) },
    annotations: report.findings.map(findingAnnotation),
    summaryMarkdown: discoverSummary(report),
    text: discoverText(report),
    json: report,
    failure: discoverFailure(report, failOn),
  }
}

/** Findings from git point at the line to fix; cluster findings name the object instead. */
function findingAnnotation(f: Finding): Annotation {
  return {
    severity: f.severity,
    title: `helmrelease-trigger ${f.code}`,
    message: f.message,
    ...(f.file === undefined ? {} : { file: f.file }),
    ...(f.line === undefined ? {} : { line: f.line }),
  }
}
