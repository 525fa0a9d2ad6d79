// The drift command's flags: the action's inputs under the same names.
import { describe, expect, it } from 'vitest'
import { parseArgs } from '../../../src/entry/cli.ts'
import { ConfigurationError } from '../../../src/lib/errors.ts'
import { parseSettings } from '../../../src/settings.ts'

function settingsOf(argv: string[]) {
  const args = parseArgs(argv)
  return parseSettings((name) => (name === 'mode' ? args.command : (args.inputs.get(name) ?? '')))
}

describe('helmrelease-trigger drift flags', () => {
  it('reads --drift-action, repeated --drift-ignore rules and --selector', () => {
    const s = settingsOf([
      'drift',
      '--drift-action',
      'correct',
      '--drift-ignore',
      'Deployment/*/spec.replicas',
      '--drift-ignore=metadata.annotations[a.b/c]',
      '--selector',
      'team=web,tier in (a,b)',
    ])
    expect(s.mode).toBe('drift')
    expect(s.driftAction).toBe('correct')
    expect(s.driftIgnore.map((r) => r.text)).toEqual(['Deployment/*/spec.replicas', 'metadata.annotations[a.b/c]'])
    expect(s.selector).toBe('team=web,tier in (a,b)')
  })

  it('defaults to report, no rules, every release', () => {
    const s = settingsOf(['drift'])
    expect([s.driftAction, s.driftIgnore, s.selector]).toEqual(['report', [], undefined])
  })

  it('refuses an unknown drift-action, a malformed rule and a selector with a newline or odd characters', () => {
    expect(() => settingsOf(['drift', '--drift-action', 'revert'])).toThrow("Input 'drift-action' must be one of report, fail, correct; got 'revert'.")
    expect(() => settingsOf(['drift', '--drift-ignore', 'spec..replicas'])).toThrow(ConfigurationError)
    expect(() => settingsOf(['drift', '--selector', 'a=b;rm'])).toThrow("Input 'selector' must be a label selector")
  })

  it('keeps comment lines out of drift-ignore', () => {
    const s = parseSettings((n) => (n === 'drift-ignore' ? '# owned by the autoscaler\nDeployment/*/spec.replicas\n\n' : ''))
    expect(s.driftIgnore.map((r) => r.text)).toEqual(['Deployment/*/spec.replicas'])
  })
})
