// The README's inputs/outputs reference is generated from action.yml: regenerate it in
// memory and compare, so a new or changed input cannot go undocumented.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readAction, renderSection, updateReadme } from '../../scripts/readme-reference.mjs'

const root = join(import.meta.dirname, '..', '..')
const read = (file: string): string => readFileSync(join(root, file), 'utf8')

describe('README reference', () => {
  it('equals what action.yml generates (run node scripts/readme-reference.mjs)', () => {
    const readme = read('README.md')
    expect(updateReadme(readme, read('action.yml'))).toBe(readme)
  })

  it('documents every input and output of action.yml', () => {
    const readme = read('README.md')
    const action = readAction(read('action.yml'))
    for (const { name } of [...action.inputs, ...action.outputs]) expect(readme).toContain(`| \`${name}\` |`)
  })
})

describe('the generator', () => {
  const actionText = [
    'name: x',
    'inputs:',
    '  paths:',
    '    description: Globs, one per line; see <prefix>/name | or not.',
    '    default: |',
    '      **/*.yaml',
    '      **/*.yml',
    '  token:',
    '    description: A token.',
    '    required: true',
    'outputs:',
    '  plan:',
    "    description: 'JSON: {a, b}.'",
  ].join('\n')

  it('lists multi-line defaults, escapes pipes and angle brackets, marks required inputs', () => {
    expect(renderSection('inputs', readAction(actionText))).toBe(
      [
        '| input | default | description |',
        '| --- | --- | --- |',
        '| `paths` | `**/*.yaml`, `**/*.yml` | Globs, one per line; see &lt;prefix>/name \\| or not. |',
        '| `token` (required) |  | A token. |',
      ].join('\n'),
    )
  })

  it('rewrites only the marked regions and keeps them away from Prettier', () => {
    const readme = [
      '# T',
      'before',
      '<!-- inputs:start -->',
      'stale',
      '<!-- inputs:end -->',
      'middle',
      '<!-- outputs:start -->',
      '<!-- outputs:end -->',
      'after',
      '',
    ].join('\n')
    const updated = updateReadme(readme, actionText)
    expect(updated.startsWith('# T\nbefore\n<!-- inputs:start -->\n<!-- prettier-ignore-start -->\n| input |')).toBe(true)
    expect(updated).not.toContain('stale')
    expect(updated).toContain('<!-- prettier-ignore-end -->\n<!-- inputs:end -->\nmiddle\n<!-- outputs:start -->')
    expect(updated).toContain('| `plan` | JSON: {a, b}. |')
    expect(updated.endsWith('<!-- outputs:end -->\nafter\n')).toBe(true)
    expect(updateReadme(updated, actionText)).toBe(updated)
  })

  it('says what is wrong with a README without markers or an invalid action.yml', () => {
    expect(() => updateReadme('# no markers\n', actionText)).toThrow('README.md has no <!-- inputs:start --> … <!-- inputs:end --> markers')
    expect(() => updateReadme('', 'inputs:\n  a:\n    description: x: y\n')).toThrow(/action\.yml is not valid YAML/)
  })
})
