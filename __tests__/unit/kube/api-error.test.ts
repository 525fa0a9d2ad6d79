// What the Kubernetes client throws, turned into our error kinds and one sentence each;
// and the retry loop that acts on those kinds.

import { ApiException } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { ConfigurationError, TransientError } from '../../../src/lib/errors.ts'
import {
  ApiMissingError,
  classify,
  ConflictError,
  describe as describeRequest,
  ForbiddenError,
  NotFoundError,
  rbacRule,
  type Request,
} from '../../../src/kube/api-error.ts'
import { outagePatience, withRetry, type RetryPolicy } from '../../../src/lib/retry.ts'

const SERVER = 'https://cluster.example.test:6443'

const getRelease: Request = { verb: 'get', resource: 'helmreleases', group: 'helm.toolkit.fluxcd.io', namespace: 'apps', name: 'app' }
const patchRelease: Request = { verb: 'patch', resource: 'helmreleases', group: 'helm.toolkit.fluxcd.io', namespace: 'apps', name: 'app' }
const listReleases: Request = { verb: 'list', resource: 'helmreleases', group: 'helm.toolkit.fluxcd.io', namespace: 'apps' }
const listAllReleases: Request = { verb: 'list', resource: 'helmreleases', group: 'helm.toolkit.fluxcd.io' }
const getConfigMap: Request = { verb: 'get', resource: 'configmaps', group: '', namespace: 'apps', name: 'app-values' }
const getKustomization: Request = { verb: 'get', resource: 'kustomizations', group: 'kustomize.toolkit.fluxcd.io', namespace: 'flux-system', name: 'apps' }

/** A Kubernetes Status body, as the apiserver sends it with an error. */
function status(code: number, reason: string, message: string, details: Record<string, string> = {}): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code })
}

const api = (code: number, body: unknown, headers: Record<string, string> = {}): ApiException<unknown> =>
  new ApiException(code, `HTTP-Code: ${code}`, body, headers)

function networkError(code: string): TypeError {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${code} 10.0.0.1:6443`), { code }) })
}

async function timeoutReason(): Promise<unknown> {
  const signal = AbortSignal.timeout(1)
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
  return signal.reason
}

describe('classify', () => {
  it('401 → ConfigurationError about the credentials', () => {
    const error = classify(api(401, status(401, 'Unauthorized', 'Unauthorized')), getRelease, SERVER)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(error).not.toBeInstanceOf(TransientError)
    expect(error.message).toBe(
      `The Kubernetes API server ${SERVER} rejected the credentials (401 Unauthorized); the kubeconfig's token or client certificate is invalid or expired.`,
    )
  })

  it.each([
    [
      patchRelease,
      'Forbidden: cannot patch helmreleases.helm.toolkit.fluxcd.io app in namespace apps. Grant the identity this RBAC rule: apiGroups: ["helm.toolkit.fluxcd.io"], resources: ["helmreleases"], verbs: ["patch"] in a Role in namespace apps (or a ClusterRole).',
    ],
    [
      listAllReleases,
      'Forbidden: cannot list helmreleases.helm.toolkit.fluxcd.io in all namespaces. Grant the identity this RBAC rule: apiGroups: ["helm.toolkit.fluxcd.io"], resources: ["helmreleases"], verbs: ["list"] in a ClusterRole.',
    ],
    [
      getConfigMap,
      'Forbidden: cannot get configmaps app-values in namespace apps. Grant the identity this RBAC rule: apiGroups: [""], resources: ["configmaps"], verbs: ["get"] in a Role in namespace apps (or a ClusterRole).',
    ],
  ])('403 → ForbiddenError naming the verb, resource.group, namespace and the rule (%o)', (request, expected) => {
    const body = status(403, 'Forbidden', `${request.resource} is forbidden: User "system:serviceaccount:ci:deployer" cannot ${request.verb} resource`)
    const error = classify(api(403, body), request, SERVER)
    expect(error).toBeInstanceOf(ForbiddenError)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(error.message).toBe(expected)
    expect(error.cause).toBeInstanceOf(ApiException)
  })

  it('404 NotFound naming the object → NotFoundError naming it', () => {
    const body = status(404, 'NotFound', 'helmreleases.helm.toolkit.fluxcd.io "app" not found', {
      name: 'app',
      group: 'helm.toolkit.fluxcd.io',
      kind: 'helmreleases',
    })
    const error = classify(api(404, body), getRelease, SERVER)
    expect(error).toBeInstanceOf(NotFoundError)
    expect(error).not.toBeInstanceOf(ConfigurationError)
    expect(error.message).toBe('helmreleases apps/app not found')
  })

  it('404 NotFound with a parsed (object) body → NotFoundError too', () => {
    const error = classify(api(404, { kind: 'Status', reason: 'NotFound', details: { name: 'app-values', kind: 'configmaps' } }), getConfigMap, SERVER)
    expect(error).toBeInstanceOf(NotFoundError)
    expect(error.message).toBe('configmaps apps/app-values not found')
  })

  it.each([
    ['a bare 404 body', '404 page not found', getRelease],
    ['an empty body', '', getRelease],
    ['a list (no object named)', status(404, 'NotFound', 'the server could not find the requested resource'), listReleases],
    ['NotFound naming another object', status(404, 'NotFound', 'not found', { name: 'other' }), getRelease],
  ])('404 on a fluxcd.io group with %s → ApiMissingError saying Flux is not installed', (_, body, request) => {
    const error = classify(api(404, body), request, SERVER)
    expect(error).toBeInstanceOf(ApiMissingError)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(error.message).toBe(
      `The cluster at ${SERVER} has no helmreleases.helm.toolkit.fluxcd.io API: Flux is not installed (or too old); install Flux 2 with helm-controller.`,
    )
  })

  it('bare 404 on Kustomizations also says Flux is missing', () => {
    expect(classify(api(404, '404 page not found'), getKustomization, SERVER).message).toContain(
      'no kustomizations.kustomize.toolkit.fluxcd.io API: Flux is not installed',
    )
  })

  it('bare 404 on a core resource asks whether the namespace exists', () => {
    const error = classify(api(404, '404 page not found'), { verb: 'list', resource: 'configmaps', group: '', namespace: 'nope' }, SERVER)
    expect(error).toBeInstanceOf(ApiMissingError)
    expect(error.message).toBe(`The cluster at ${SERVER} does not serve configmaps in namespace nope (does the namespace exist?).`)
  })

  it('409 → ConflictError (re-read and decide again)', () => {
    const error = classify(
      api(409, status(409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again')),
      patchRelease,
      SERVER,
    )
    expect(error).toBeInstanceOf(ConflictError)
    expect(error).not.toBeInstanceOf(TransientError)
    expect(error.message).toBe('patch helmreleases.helm.toolkit.fluxcd.io app in namespace apps: the object changed meanwhile (409 Conflict)')
  })

  it.each([
    [{ 'Retry-After': '3' }, 3_000],
    [{ 'retry-after': '0' }, 0],
    [{ 'RETRY-AFTER': '1.5' }, 1_500],
    [{}, undefined],
    [{ 'Retry-After': 'soon' }, undefined],
  ])('429 with headers %o → TransientError with retryAfterMs %s', (headers, retryAfterMs) => {
    const error = classify(api(429, status(429, 'TooManyRequests', 'storage is (re)initializing'), headers), listReleases, SERVER)
    expect(error).toBeInstanceOf(TransientError)
    expect(error instanceof TransientError ? error.retryAfterMs : 'not transient').toBe(retryAfterMs)
    expect(error.message).toBe(
      'The Kubernetes API server answered 429 to list helmreleases.helm.toolkit.fluxcd.io in namespace apps: storage is (re)initializing.',
    )
  })

  it('429 with an HTTP-date Retry-After → the time until then', () => {
    const when = new Date(Date.now() + 60_000).toUTCString()
    const error = classify(api(429, '', { 'Retry-After': when }), listReleases, SERVER)
    const ms = error instanceof TransientError ? error.retryAfterMs : undefined
    expect(ms).toBeGreaterThan(55_000)
    expect(ms).toBeLessThanOrEqual(60_000)
  })

  it.each([
    [500, status(500, 'InternalError', 'Internal error occurred: etcdserver: request timed out'), 'Internal error occurred: etcdserver: request timed out'],
    [502, '', 'no message'],
    [503, status(503, 'ServiceUnavailable', ''), 'ServiceUnavailable'],
    [504, 'upstream timed out', 'upstream timed out'],
  ])('%i → TransientError quoting the server', (code, body, quoted) => {
    const error = classify(api(code, body), getRelease, SERVER)
    expect(error).toBeInstanceOf(TransientError)
    expect(error.message).toBe(`The Kubernetes API server answered ${code} to get helmreleases.helm.toolkit.fluxcd.io app in namespace apps: ${quoted}.`)
  })

  it.each([400, 405, 415, 422])('%i → ConfigurationError quoting the server', (code) => {
    const error = classify(api(code, status(code, 'Invalid', 'metadata.annotations: Invalid value')), patchRelease, SERVER)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(error.message).toBe(
      `The Kubernetes API server refused to patch helmreleases.helm.toolkit.fluxcd.io app in namespace apps (${code}): metadata.annotations: Invalid value.`,
    )
  })

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EAI_AGAIN', 'UND_ERR_SOCKET'])(
    'network error %s → TransientError naming the server and the code',
    (code) => {
      const cause = networkError(code)
      const error = classify(cause, getRelease, SERVER)
      expect(error).toBeInstanceOf(TransientError)
      expect(error.message).toBe(
        `Cannot reach the Kubernetes API server ${SERVER} (${code}); check the kubeconfig's server address and that this runner can reach it.`,
      )
      expect(error.cause).toBe(cause)
    },
  )

  it('ENOTFOUND → ConfigurationError (a wrong address is not worth retrying)', () => {
    const error = classify(networkError('ENOTFOUND'), getRelease, SERVER)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(error).not.toBeInstanceOf(TransientError)
    expect(error.message).toBe(`Cannot resolve the Kubernetes API server ${SERVER} (ENOTFOUND); check the server address in the kubeconfig.`)
  })

  it('an AbortSignal timeout → TransientError saying the server did not answer in time', async () => {
    const reason = await timeoutReason()
    expect(reason).toMatchObject({ name: 'TimeoutError' })
    for (const thrown of [reason, new TypeError('fetch failed', { cause: reason })]) {
      const error = classify(thrown, getRelease, SERVER)
      expect(error).toBeInstanceOf(TransientError)
      expect(error.message).toBe(`The Kubernetes API server ${SERVER} did not answer in time (get helmreleases.helm.toolkit.fluxcd.io app in namespace apps).`)
    }
  })

  it.each(['CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'ERR_TLS_CERT_ALTNAME_INVALID'])('TLS failure %s → ConfigurationError about the CA', (code) => {
    const error = classify(networkError(code), getRelease, SERVER)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(error.message).toContain(`TLS to the Kubernetes API server ${SERVER} failed`)
    expect(error.message).toContain('certificate-authority-data')
  })

  it('passes anything else through unchanged, wrapping non-errors', () => {
    const plain = new RangeError('bug')
    expect(classify(plain, getRelease, SERVER)).toBe(plain)
    const wrapped = classify('boom', getRelease, SERVER)
    expect(wrapped).toBeInstanceOf(Error)
    expect(wrapped.message).toBe('boom')
  })
})

describe('describe and rbacRule', () => {
  it.each([
    [getRelease, 'get helmreleases.helm.toolkit.fluxcd.io app in namespace apps'],
    [listAllReleases, 'list helmreleases.helm.toolkit.fluxcd.io in all namespaces'],
    [{ verb: 'create', resource: 'events', group: '', namespace: 'apps' } as const, 'create events in namespace apps'],
  ])('describe(%o) → %s', (request, expected) => {
    expect(describeRequest(request)).toBe(expected)
  })

  it('rbacRule names a Role in the namespace, or a ClusterRole for all namespaces', () => {
    expect(rbacRule({ verb: 'create', resource: 'events', group: '', namespace: 'apps' })).toBe(
      'apiGroups: [""], resources: ["events"], verbs: ["create"] in a Role in namespace apps (or a ClusterRole)',
    )
    expect(rbacRule(listAllReleases)).toBe('apiGroups: ["helm.toolkit.fluxcd.io"], resources: ["helmreleases"], verbs: ["list"] in a ClusterRole')
  })
})

/** Throws the given errors in turn, then returns 'ok'. */
function failing(...errors: Error[]): { fn: () => Promise<string>; calls: () => number } {
  let calls = 0
  return {
    fn: async () => {
      const error = errors[calls++]
      if (error !== undefined) throw error
      return 'ok'
    },
    calls: () => calls,
  }
}

describe('withRetry', () => {
  /** A zero-delay policy that records what it was asked to sleep. */
  function policy(attempts: number, o: { minDelayMs?: number; maxDelayMs?: number } = {}): RetryPolicy & { readonly sleeps: number[] } {
    const sleeps: number[] = []
    return {
      attempts,
      minDelayMs: o.minDelayMs ?? 0,
      maxDelayMs: o.maxDelayMs ?? 0,
      sleeps,
      sleep: async (ms) => {
        sleeps.push(ms)
      },
    }
  }

  it('returns at once when the call succeeds', async () => {
    const p = policy(5)
    const f = failing()
    expect(await withRetry(f.fn, p)).toBe('ok')
    expect([f.calls(), p.sleeps]).toEqual([1, []])
  })

  it('retries transient errors until the call succeeds', async () => {
    const p = policy(5)
    const f = failing(new TransientError('503'), new TransientError('ECONNRESET'))
    expect(await withRetry(f.fn, p)).toBe('ok')
    expect(f.calls()).toBe(3)
    expect(p.sleeps).toEqual([0, 0])
  })

  it.each([1, 2, 5])('gives up after %i attempts and throws the last transient error', async (attempts) => {
    const p = policy(attempts)
    const errors = Array.from({ length: 10 }, (_, i) => new TransientError(`failure ${i + 1}`))
    const f = failing(...errors)
    await expect(withRetry(f.fn, p)).rejects.toBe(errors[attempts - 1])
    expect(f.calls()).toBe(attempts)
    expect(p.sleeps).toHaveLength(attempts - 1)
  })

  it('honours retryAfterMs, capped at maxDelayMs', async () => {
    const p = policy(5, { minDelayMs: 0, maxDelayMs: 5_000 })
    const f = failing(
      new TransientError('429', { retryAfterMs: 3_000 }),
      new TransientError('429', { retryAfterMs: 60_000 }),
      new TransientError('429', { retryAfterMs: 0 }),
    )
    expect(await withRetry(f.fn, p)).toBe('ok')
    expect(p.sleeps).toEqual([3_000, 5_000, 0])
  })

  it('honours Retry-After as classify reads it from a 429', async () => {
    const p = policy(3, { maxDelayMs: 10_000 })
    const f = failing(classify(api(429, '', { 'Retry-After': '3' }), listReleases, SERVER))
    expect(await withRetry(f.fn, p)).toBe('ok')
    expect(p.sleeps).toEqual([3_000])
  })

  it('backs off exponentially (with at most 20% jitter) up to maxDelayMs', async () => {
    const p = policy(6, { minDelayMs: 100, maxDelayMs: 1_000 })
    const f = failing(...Array.from({ length: 5 }, () => new TransientError('503')))
    expect(await withRetry(f.fn, p)).toBe('ok')
    const floors = [100, 200, 400, 800, 1_000]
    expect(p.sleeps).toHaveLength(floors.length)
    p.sleeps.forEach((ms, i) => {
      const floor = floors[i] ?? Number.NaN
      expect(ms).toBeGreaterThanOrEqual(floor)
      expect(ms).toBeLessThanOrEqual(floor * 1.2)
    })
  })

  it.each([
    ['ConfigurationError', new ConfigurationError('bad input')],
    ['ForbiddenError', new ForbiddenError('Forbidden')],
    ['ConflictError', new ConflictError('409')],
    ['NotFoundError', new NotFoundError('not found')],
    ['a plain Error', new Error('bug')],
  ])('never retries a %s', async (_, error) => {
    const p = policy(5)
    const f = failing(error)
    await expect(withRetry(f.fn, p)).rejects.toBe(error)
    expect([f.calls(), p.sleeps]).toEqual([1, []])
  })

  it('stops at a ConfigurationError that follows transient ones', async () => {
    const p = policy(5)
    const fatal = classify(networkError('ENOTFOUND'), getRelease, SERVER)
    const f = failing(classify(networkError('ECONNREFUSED'), getRelease, SERVER), fatal)
    await expect(withRetry(f.fn, p)).rejects.toBe(fatal)
    expect(f.calls()).toBe(2)
  })
})

describe('patience with an apiserver outage', () => {
  const refused = (): Error => classify(networkError('ECONNREFUSED'), patchRelease, SERVER)

  it.each([
    ['a refused connection', () => classify(networkError('ECONNREFUSED'), patchRelease, SERVER), true],
    ['a reset connection', () => classify(networkError('ECONNRESET'), patchRelease, SERVER), true],
    ['502', () => classify(api(502, ''), patchRelease, SERVER), true],
    ['503', () => classify(api(503, status(503, 'ServiceUnavailable', 'apiserver is shutting down')), patchRelease, SERVER), true],
    ['504', () => classify(api(504, 'upstream timed out'), patchRelease, SERVER), true],
    ['500', () => classify(api(500, status(500, 'InternalError', 'webhook failed')), patchRelease, SERVER), false],
    ['429', () => classify(api(429, status(429, 'TooManyRequests', 'slow down')), patchRelease, SERVER), false],
  ])('%s is an unreachable apiserver: %s', (_, make, unreachable) => {
    const error = make()
    expect(error).toBeInstanceOf(TransientError)
    expect((error as TransientError).unreachable).toBe(unreachable)
  })

  it('a request that timed out is not an outage: the server is there, slow', async () => {
    const error = classify(await timeoutReason(), patchRelease, SERVER)
    expect(error).toBeInstanceOf(TransientError)
    expect((error as TransientError).unreachable).toBe(false)
  })

  /** A policy on a fake clock that its sleeps move, with patience `patienceMs`. */
  function patient(patienceMs: number): RetryPolicy & { readonly sleeps: number[] } {
    let now = 0
    const sleeps: number[] = []
    return {
      attempts: 3,
      minDelayMs: 100,
      maxDelayMs: 1_000,
      patience: outagePatience(patienceMs, () => now),
      sleeps,
      sleep: async (ms) => {
        sleeps.push(ms)
        now += ms
      },
    }
  }

  it('a server that never answered gets no patience: a wrong address fails after the attempts', async () => {
    const p = patient(60_000)
    const error = refused()
    const f = failing(...Array.from({ length: 10 }, () => error))
    await expect(withRetry(f.fn, p)).rejects.toBe(error)
    expect(f.calls()).toBe(3)
  })

  it('after an answer, calls go on past their attempts until the server is back, at the longest delay', async () => {
    const p = patient(60_000)
    expect(await withRetry(async () => 'up', p)).toBe('up')
    const f = failing(...Array.from({ length: 20 }, refused))
    expect(await withRetry(f.fn, p)).toBe('ok')
    expect(f.calls()).toBe(21)
    expect(p.sleeps.slice(5).every((ms) => ms >= 1_000 && ms <= 1_200)).toBe(true)
  })

  it('gives up once the outage is older than the patience, and the next call does not wait it out again', async () => {
    const p = patient(10_000)
    await withRetry(async () => 'up', p)
    const down = async (): Promise<never> => {
      throw refused()
    }
    await expect(withRetry(down, p)).rejects.toThrow(/Cannot reach the Kubernetes API server/)
    // The attempts (100 + 200 ms) then 10 s of patience at ≤1 s apart.
    const waited = p.sleeps.reduce((a, b) => a + b, 0)
    expect(waited).toBeGreaterThanOrEqual(10_000)
    expect(waited).toBeLessThan(10_000 + 300 * 1.2 + 1_000 * 1.2)
    const before = p.sleeps.length
    await expect(withRetry(down, p)).rejects.toThrow(/Cannot reach/)
    expect(p.sleeps.length - before).toBe(2)
  })

  it('an answer ends the outage: the next one gets the whole patience again', async () => {
    const p = patient(5_000)
    await withRetry(async () => 'up', p)
    // Each round sleeps about 3 s past its attempts: both fit in 5 s only if the answer between them restarted the clock.
    for (const round of [1, 2]) {
      const f = failing(...Array.from({ length: 6 }, refused))
      expect(await withRetry(f.fn, p), `round ${round}`).toBe('ok')
      expect(f.calls()).toBe(7)
    }
  })

  it('has no patience with errors that are not an outage', async () => {
    const p = patient(60_000)
    await withRetry(async () => 'up', p)
    const error = classify(api(500, status(500, 'InternalError', 'webhook failed')), patchRelease, SERVER)
    const f = failing(...Array.from({ length: 10 }, () => error))
    await expect(withRetry(f.fn, p)).rejects.toBe(error)
    expect(f.calls()).toBe(3)
  })
})
