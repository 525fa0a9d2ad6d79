// Label/annotation keys and the name rules they and the manifests are checked against.

import { describe, expect, it } from 'vitest'
import { DEFAULT_PREFIX, DEFAULT_TARGET_NAMESPACE, FLUX_KEYS, isDnsLabel, isDnsSubdomain, keysFor } from '../../../src/core/keys.ts'

describe('keysFor', () => {
  it('builds the operator-compatible keys for the default prefix', () => {
    expect(keysFor(DEFAULT_PREFIX)).toEqual({
      prefix: 'nebius.ai',
      triggerLabel: 'nebius.ai/helmrelease-trigger-operator',
      triggerLabelValue: 'true',
      targetNames: 'nebius.ai/helmreleases-name',
      targetNamespace: 'nebius.ai/helmreleases-namespace',
      configDigest: 'nebius.ai/config-digest',
      recoverAttempts: 'nebius.ai/recover-attempts',
      recoverAt: 'nebius.ai/recover-at',
      requestedAt: 'reconcile.fluxcd.io/requestedAt',
      forceAt: 'reconcile.fluxcd.io/forceAt',
      resetAt: 'reconcile.fluxcd.io/resetAt',
      watchLabel: 'reconcile.fluxcd.io/watch',
      watchLabelValue: 'Enabled',
    })
  })

  it('puts our keys under a custom prefix and leaves the Flux keys alone', () => {
    const keys = keysFor('platform.example.com')
    expect(keys.triggerLabel).toBe('platform.example.com/helmrelease-trigger-operator')
    expect(keys.targetNames).toBe('platform.example.com/helmreleases-name')
    expect(keys.targetNamespace).toBe('platform.example.com/helmreleases-namespace')
    expect(keys.configDigest).toBe('platform.example.com/config-digest')
    expect(keys.requestedAt).toBe(FLUX_KEYS.requestedAt)
    expect(keys.watchLabel).toBe('reconcile.fluxcd.io/watch')
  })

  it('defaults annotated targets to flux-system', () => {
    expect(DEFAULT_TARGET_NAMESPACE).toBe('flux-system')
  })

  it.each([
    [''],
    ['Nebius.ai'],
    ['nebius_ai'],
    ['-nebius.ai'],
    ['nebius.ai-'],
    ['nebius..ai'],
    ['nebius.ai/x'],
    [' nebius.ai'],
    [`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}`], // 254 characters
    [`${'a'.repeat(64)}.io`], // a 64-character label
  ])('rejects the prefix %j with a message naming the expected format', (prefix) => {
    expect(() => keysFor(prefix)).toThrow(/^Invalid annotation prefix '.*'\. Expected a DNS subdomain such as 'nebius\.ai'/)
  })

  it('accepts a 253-character prefix', () => {
    const prefix = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`
    expect(prefix).toHaveLength(253)
    expect(keysFor(prefix).configDigest).toBe(`${prefix}/config-digest`)
  })
})

describe('DNS-1123 names', () => {
  it.each([
    ['a', true, true],
    ['my-app', true, true],
    ['0day', true, true],
    ['my.app', false, true],
    ['a'.repeat(63), true, true],
    ['a'.repeat(64), false, false],
    ['', false, false],
    ['My-app', false, false],
    ['my_app', false, false],
    ['-app', false, false],
    ['app-', false, false],
    ['my..app', false, false],
    ['.app', false, false],
  ])('%j: label %s, subdomain %s', (name, label, subdomain) => {
    expect(isDnsLabel(name)).toBe(label)
    expect(isDnsSubdomain(name)).toBe(subdomain)
  })

  it('limits a subdomain to 253 characters', () => {
    const name253 = Array.from({ length: 4 }, () => 'a'.repeat(63))
      .join('.')
      .slice(0, 253)
    expect(name253).toHaveLength(253)
    expect(isDnsSubdomain(name253)).toBe(true)
    expect(isDnsSubdomain(`${name253}a`)).toBe(false)
  })
})
