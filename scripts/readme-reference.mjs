// Generates the README's inputs and outputs reference from action.yml, so the two cannot
// disagree: the tables between <!-- inputs:start -->/<!-- inputs:end --> and
// <!-- outputs:start -->/<!-- outputs:end --> are rewritten, nothing else is touched.
// Usage: node scripts/readme-reference.mjs [--check]
//   (no flag) rewrite README.md in place; --check exit 1 when README.md is out of date.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseDocument } from 'yaml'

/** The marked regions of the README, in the order they appear. */
export const SECTIONS = ['inputs', 'outputs']

/** Reads action.yml's text into its inputs and outputs; a malformed file is an error naming the problem. */
export function readAction(text) {
  const doc = parseDocument(text, { prettyErrors: true })
  if (doc.errors.length > 0) throw new Error(`action.yml is not valid YAML: ${doc.errors[0].message}`)
  const action = doc.toJS()
  if (!isRecord(action)) throw new Error('action.yml is not a mapping')
  const entries = (field) => {
    const value = action[field] ?? {}
    if (!isRecord(value)) throw new Error(`action.yml: '${field}' must be a mapping`)
    return Object.entries(value).map(([name, spec]) => {
      if (!isRecord(spec) || typeof spec.description !== 'string') throw new Error(`action.yml: ${field}.${name} needs a description`)
      return { name, description: spec.description, default: spec.default === undefined ? undefined : String(spec.default), required: spec.required === true }
    })
  }
  return { inputs: entries('inputs'), outputs: entries('outputs') }
}

/** The Markdown of one section (without its markers). */
export function renderSection(section, action) {
  if (section === 'inputs') {
    return table(
      ['input', 'default', 'description'],
      action.inputs.map((i) => [`\`${i.name}\`${i.required ? ' (required)' : ''}`, defaultCell(i.default), text(i.description)]),
    )
  }
  if (section === 'outputs')
    return table(
      ['output', 'description'],
      action.outputs.map((o) => [`\`${o.name}\``, text(o.description)]),
    )
  throw new Error(`unknown section '${section}'`)
}

/** The README with every marked section regenerated from action.yml's text. */
export function updateReadme(readme, actionText) {
  const action = readAction(actionText)
  let out = readme
  for (const section of SECTIONS) {
    const start = `<!-- ${section}:start -->`
    const end = `<!-- ${section}:end -->`
    const from = out.indexOf(start)
    const to = out.indexOf(end)
    if (from === -1 || to === -1 || to < from) throw new Error(`README.md has no ${start} … ${end} markers`)
    // Prettier would realign the table; the generated form is the one kept.
    const body = ['<!-- prettier-ignore-start -->', renderSection(section, action), '<!-- prettier-ignore-end -->'].join('\n')
    out = `${out.slice(0, from + start.length)}\n${body}\n${out.slice(to)}`
  }
  return out
}

function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

function defaultCell(value) {
  if (value === undefined || value.trim() === '') return ''
  // A multi-line default (paths) is one value per line: list them.
  return value
    .split('\n')
    .map((v) => v.trim())
    .filter((v) => v !== '')
    .map((v) => `\`${v.replace(/`/g, '\\`').replace(/\|/g, '\\|')}\``)
    .join(', ')
}

/** Plain description text as a table cell: one line, pipes and angle brackets escaped. */
function text(value) {
  return value
    .trim()
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .replace(/</g, '&lt;')
}

function isRecord(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const isMain = process.argv[1] !== undefined && import.meta.filename === process.argv[1]
if (isMain) {
  const root = join(import.meta.dirname, '..')
  const readmePath = join(root, 'README.md')
  const readme = readFileSync(readmePath, 'utf8')
  let updated
  try {
    updated = updateReadme(readme, readFileSync(join(root, 'action.yml'), 'utf8'))
  } catch (error) {
    console.error(`readme-reference: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(2)
  }
  if (process.argv.includes('--check')) {
    if (updated !== readme) {
      console.error('README.md: the inputs/outputs reference differs from action.yml; run node scripts/readme-reference.mjs')
      process.exitCode = 1
    }
  } else if (updated !== readme) {
    writeFileSync(readmePath, updated)
    console.log('README.md: inputs/outputs reference regenerated from action.yml')
  }
}
