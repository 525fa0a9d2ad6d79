// The action's one publish path: a mode's result becomes annotations, outputs, the job summary,
// log lines and the fail-on verdict. Every piece is capped to what GitHub accepts and made plain:
// untrusted text in it can start no workflow command.

import * as core from '@actions/core'
import { cell } from '../lib/text.ts'
import { capJson } from '../lib/json-cap.ts'
import { logLine, plainText, safeJson } from '../lib/untrusted.ts'
import type { Annotation, ModeResult } from '../modes/mode.ts'

type Env = Readonly<Record<string, string | undefined>>

/** Annotations per step: GitHub shows only the first few anyway; the rest are in the summary and outputs. */
const MAX_ANNOTATIONS = 50
/** GitHub refuses a step summary over 1 MiB; stay under it with room for the closing line. */
const MAX_SUMMARY_BYTES = 1024 * 1024 - 4096
/** GitHub takes a step or job output of at most 1 MB; a reusable workflow passes ours on as job outputs. */
export const MAX_OUTPUT_BYTES = 900_000

export async function publish(result: ModeResult, env: Env): Promise<void> {
  for (const a of result.annotations.slice(0, MAX_ANNOTATIONS)) annotate(a)
  if (result.annotations.length > MAX_ANNOTATIONS)
    core.notice(`…and ${result.annotations.length - MAX_ANNOTATIONS} more problems: see the job summary and the outputs.`, { title: 'helmrelease-trigger' })
  for (const [name, value] of Object.entries(result.outputs)) core.setOutput(name, outputText(value))
  if (env['GITHUB_STEP_SUMMARY']) await writeSummary(result.summaryMarkdown)
  say(result.headline)
  for (const line of result.log) say(line)
  // The report as the CLI prints it, aligned for the log's monospace, folded away by default.
  if (result.text !== '') {
    core.startGroup('The report (as the CLI prints it)')
    for (const line of result.text.replace(/\n$/, '').split('\n')) say(line)
    core.endGroup()
  }
  if (result.failure !== undefined) core.setFailed(plainText(result.failure))
}

/** A run that never got to a result (no cluster, bad input) still tells the job page why. */
export async function publishError(message: string, env: Env): Promise<void> {
  core.setFailed(plainText(message))
  if (env['GITHUB_STEP_SUMMARY'])
    await core.summary
      .addRaw(`## helmrelease-trigger: failed\n\n${cell(message)}\n`)
      .write()
      .catch(() => undefined)
}

/**
 * An output as written: under GitHub's size limit (a JSON output cut to a valid, shorter document
 * that says so), and no line a workflow command where a step prints it.
 */
export function outputText(value: string): string {
  let text = safeJson(value)
  // Escaping can lengthen the text: cut again with what it added taken off the budget.
  for (let budget = MAX_OUTPUT_BYTES; Buffer.byteLength(text) > MAX_OUTPUT_BYTES && budget > 0; budget -= Buffer.byteLength(text) - budget) {
    try {
      text = safeJson(capJson(value, budget))
    } catch {
      text = safeJson(JSON.stringify(`${value.slice(0, budget / 8)}… (truncated to fit GitHub’s output limit: the job summary has the rest)`))
    }
  }
  return text
}

/** The only way a line reaches the log: untrusted text in it can start no workflow command. */
export function say(line: string): void {
  core.info(logLine(line))
}

/** The job summary, cut at a line when it would pass GitHub's 1 MiB limit, saying how much was left out. */
async function writeSummary(markdown: string): Promise<void> {
  let text = markdown
  if (Buffer.byteLength(text) > MAX_SUMMARY_BYTES) {
    const lines = markdown.split('\n')
    let bytes = 0
    let kept = 0
    while (kept < lines.length && bytes + Buffer.byteLength(lines[kept] ?? '') + 1 <= MAX_SUMMARY_BYTES) bytes += Buffer.byteLength(lines[kept++] ?? '') + 1
    text = `${lines.slice(0, kept).join('\n')}\n\n…and ${lines.length - kept} more lines (the summary is capped at 1 MiB; the outputs have the rest).\n`
  }
  await core.summary.addRaw(text).write()
}

/** An annotation; the toolkit escapes line breaks, we escape controls and cap the length. */
function annotate(a: Annotation): void {
  const text = plainText(a.message)
  const properties: core.AnnotationProperties = {
    title: a.title,
    ...(a.file === undefined ? {} : { file: a.file }),
    ...(a.line === undefined ? {} : { startLine: a.line }),
  }
  if (a.severity === 'error') core.error(text, properties)
  else if (a.severity === 'warning') core.warning(text, properties)
  else core.notice(text, properties)
}
