// One coordination.k8s.io/v1 Lease, read and written with optimistic concurrency: an update
// carries the resourceVersion it was based on, so two candidates never both win one round.

import { NotFoundError, type Request } from './api-error.ts'
import type { RawClient } from './raw-client.ts'

export interface LeaseRecord {
  /** '' when released. */
  readonly holderIdentity: string
  readonly leaseDurationSeconds: number
  /** RFC 3339 with microseconds (MicroTime). */
  readonly acquireTime: string
  readonly renewTime: string
  readonly leaseTransitions: number
}

export interface StoredLease {
  readonly record: LeaseRecord
  readonly resourceVersion: string
}

export interface LeaseStore {
  /** undefined when the Lease does not exist. */
  get(): Promise<StoredLease | undefined>
  /** Throws ConflictError when it exists already. */
  create(record: LeaseRecord): Promise<StoredLease>
  /** Throws ConflictError when it changed since `resourceVersion`. */
  update(record: LeaseRecord, resourceVersion: string): Promise<StoredLease>
  readonly description: string
}

export function createLeaseStore(raw: RawClient, namespace: string, name: string): LeaseStore {
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`
  const describe = (verb: Request['verb'], withName = true): Request => ({
    verb,
    resource: 'leases',
    group: 'coordination.k8s.io',
    namespace,
    ...(withName ? { name } : {}),
  })
  const body = (record: LeaseRecord, resourceVersion?: string): unknown => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
    spec: record,
  })
  return {
    description: `Lease ${namespace}/${name}`,
    async get() {
      try {
        return toStored(await raw.json({ method: 'GET', path: `${collection}/${encodeURIComponent(name)}`, describe: describe('get'), timeoutMs: 10_000 }))
      } catch (error) {
        if (error instanceof NotFoundError) return undefined
        throw error
      }
    },
    async create(record) {
      return toStored(await raw.json({ method: 'POST', path: collection, body: body(record), describe: describe('create', false), timeoutMs: 10_000 }))
    },
    async update(record, resourceVersion) {
      return toStored(
        await raw.json({
          method: 'PUT',
          path: `${collection}/${encodeURIComponent(name)}`,
          body: body(record, resourceVersion),
          describe: describe('update'),
          timeoutMs: 10_000,
        }),
      )
    },
  }
}

function toStored(value: unknown): StoredLease {
  const o = record(value)
  const spec = record(o['spec'])
  const metadata = record(o['metadata'])
  return {
    resourceVersion: typeof metadata['resourceVersion'] === 'string' ? metadata['resourceVersion'] : '',
    record: {
      holderIdentity: typeof spec['holderIdentity'] === 'string' ? spec['holderIdentity'] : '',
      leaseDurationSeconds: typeof spec['leaseDurationSeconds'] === 'number' ? spec['leaseDurationSeconds'] : 0,
      acquireTime: typeof spec['acquireTime'] === 'string' ? spec['acquireTime'] : '',
      renewTime: typeof spec['renewTime'] === 'string' ? spec['renewTime'] : '',
      leaseTransitions: typeof spec['leaseTransitions'] === 'number' ? spec['leaseTransitions'] : 0,
    },
  }
}

function record(value: unknown): Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}
