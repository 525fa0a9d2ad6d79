// A loopback GitHub REST API for tests. Every request and every answer is validated against
// GitHub's published description of api.github.com (@octokit/openapi) with openapi-backend:
// a request GitHub would reject is answered 422 and recorded in `violations`, which every
// test asserts empty. State is kept for the routes the reporter uses (check runs, commit
// statuses, commits → pulls, issue comments with pagination, deployments and their statuses),
// and chosen requests can be answered with a fault: 403 (missing permission), 422, or a
// secondary rate limit with Retry-After.
//
//   const api = await startGitHubApi()
//   api.addPullRequest(sha, 7)
//   api.fault({ operationId: 'checks/create', status: 403 })

import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { OpenAPIBackend, type Document, type Operation } from 'openapi-backend'

/** The operations this server keeps state for; any other request is a test failure. */
const OPERATIONS = {
  '/repos/{owner}/{repo}/check-runs': ['post'],
  '/repos/{owner}/{repo}/check-runs/{check_run_id}': ['get', 'patch'],
  '/repos/{owner}/{repo}/commits/{ref}/check-runs': ['get'],
  '/repos/{owner}/{repo}/statuses/{sha}': ['post'],
  '/repos/{owner}/{repo}/commits/{ref}/statuses': ['get'],
  '/repos/{owner}/{repo}/commits/{commit_sha}/pulls': ['get'],
  '/repos/{owner}/{repo}/issues/{issue_number}/comments': ['get', 'post'],
  '/repos/{owner}/{repo}/issues/comments/{comment_id}': ['get', 'patch'],
  '/repos/{owner}/{repo}/deployments': ['get', 'post'],
  '/repos/{owner}/{repo}/deployments/{deployment_id}/statuses': ['get', 'post'],
  '/user': ['get'],
} as const

export type JsonObject = Record<string, unknown>

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly operationId: string | undefined
  readonly body: unknown
  readonly status: number
}

export interface Fault {
  readonly operationId: string
  /** 403 without retryAfter: a token missing a permission. */
  readonly status: 403 | 422 | 429 | 500
  /** Seconds; with 403/429 this is GitHub's secondary rate limit. */
  readonly retryAfter?: number
  /** How many matching requests get the fault (default: all). */
  readonly times?: number
}

export interface CheckRun {
  id: number
  name: string
  head_sha: string
  status: string
  conclusion: string | null
  details_url: string | null
  external_id: string | null
  started_at: string | null
  completed_at: string | null
  output: { title: string | null; summary: string | null; text: string | null }
  annotations: JsonObject[]
}

export interface Comment {
  id: number
  body: string
  user: string
  created_at: string
  updated_at: string
}

export interface Deployment {
  id: number
  sha: string
  ref: string
  environment: string
  description: string | null
  task: string
  payload: unknown
  statuses: { id: number; state: string; log_url: string; environment_url: string; description: string }[]
}

export interface PullRequest {
  readonly number: number
  /** The commit the pull request is associated with: its head, or its merge commit when merged. */
  readonly head: string
  readonly fromFork: boolean
  /** Merged as `head` (squash or merge commit): closed, with merged_at and merge_commit_sha. */
  readonly merged: boolean
}

export interface GitHubApi {
  /** http://127.0.0.1:<port>: pass as the API base URL. */
  readonly url: string
  readonly owner: string
  readonly repo: string
  /** Everything GitHub would have refused, or answers of ours that break the description. */
  readonly violations: readonly string[]
  readonly requests: readonly RecordedRequest[]
  readonly checkRuns: readonly CheckRun[]
  readonly statuses: readonly { sha: string; state: string; context: string; description: string | null; target_url: string | null }[]
  readonly deployments: readonly Deployment[]
  comments(issue: number): readonly Comment[]
  /** A pull request whose head (or, merged, whose merge commit) is `sha`. */
  addPullRequest(sha: string, number: number, options?: { fromFork?: boolean; merged?: boolean }): void
  /** Comments by other people, so the sticky one must be searched for across pages. */
  addComments(issue: number, bodies: readonly string[], user?: string): void
  fault(fault: Fault): void
  /** Returns the violations so far and forgets them (for a test that provokes one on purpose). */
  takeViolations(): string[]
  /** Requests answered with an injected fault so far, by operation. */
  faulted(operationId: string): number
  close(): Promise<void>
}

export interface GitHubApiOptions {
  readonly owner?: string
  readonly repo?: string
  /** The token's user (the author of comments it writes). */
  readonly login?: string
}

// ---- the description ------------------------------------------------------------------

let backend: Promise<OpenAPIBackend> | undefined

/** GitHub's description narrowed to OPERATIONS and what they reference; parsed and compiled once per process. */
function loadBackend(): Promise<OpenAPIBackend> {
  backend ??= (async () => {
    const require = createRequire(import.meta.url)
    const file = require.resolve('@octokit/openapi/generated/api.github.com.json')
    const full = JSON.parse(readFileSync(file, 'utf8')) as {
      openapi: string
      info: JsonObject
      paths: Record<string, Record<string, unknown>>
      components: Record<string, Record<string, unknown>>
    }
    const paths: Record<string, Record<string, unknown>> = {}
    for (const [path, methods] of Object.entries(OPERATIONS)) {
      const item = full.paths[path]
      if (item === undefined) throw new Error(`GitHub's description has no ${path}`)
      paths[path] = Object.fromEntries(Object.entries(item).filter(([k]) => k === 'parameters' || (methods as readonly string[]).includes(k)))
    }
    const components: Record<string, Record<string, unknown>> = {}
    const seen = new Set<string>()
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk)
      else if (typeof value === 'object' && value !== null) {
        for (const [key, inner] of Object.entries(value)) {
          if (key === '$ref' && typeof inner === 'string' && !seen.has(inner)) {
            seen.add(inner)
            const [, , section = '', name = ''] = inner.split('/')
            const target = full.components[section]?.[name]
            ;(components[section] ??= {})[name] = target
            walk(target)
          } else walk(inner)
        }
      }
    }
    walk(paths)
    allowNullInNullableEnums(paths)
    allowNullInNullableEnums(components)
    const definition = { openapi: full.openapi, info: full.info, paths, components } as unknown as Document
    const api = new OpenAPIBackend({
      definition,
      validate: true,
      ajvOpts: { strict: false },
      customizeAjv: (ajv) => {
        ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s) && !Number.isNaN(Date.parse(s)))
        ajv.addFormat('date', /^\d{4}-\d\d-\d\d$/)
        ajv.addFormat('uri', (s: string) => URL.canParse(s))
        ajv.addFormat('email', /^[^@\s]+@[^@\s]+$/)
        ajv.addFormat('uri-template', () => true)
        return ajv
      },
    })
    await api.init()
    return api
  })()
  return backend
}

// ---- the server ------------------------------------------------------------------------

const SECONDARY = 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.'
const DOCS = 'https://docs.github.com/rest'

export async function startGitHubApi(options: GitHubApiOptions = {}): Promise<GitHubApi> {
  const api = await loadBackend()
  const owner = options.owner ?? 'acme'
  const repo = options.repo ?? 'fleet'
  const login = options.login ?? 'github-actions[bot]'
  const violations: string[] = []
  const requests: RecordedRequest[] = []
  const checkRuns: CheckRun[] = []
  const statuses: { sha: string; state: string; context: string; description: string | null; target_url: string | null; id: number; at: string }[] = []
  const deployments: Deployment[] = []
  const comments = new Map<number, Comment[]>()
  const pulls: PullRequest[] = []
  const faults: { fault: Fault; left: number }[] = []
  const faultedCount = new Map<string, number>()
  let nextId = 1000
  let tick = 0
  // Timestamps advance by a second per write: deterministic, and ordered like GitHub's.
  const now = (): string => new Date(Date.UTC(2026, 10, 25, 8, 0, tick++)).toISOString().replace(/\.\d+Z$/, 'Z')
  let base = ''

  const mock = (operationId: string, code: number): JsonObject => {
    const m = api.mockResponseForOperation(operationId, { code })
    return structuredClone(m.mock) as JsonObject
  }

  const checkRunJson = (c: CheckRun): JsonObject => ({
    ...mock('checks/get', 200),
    id: c.id,
    node_id: `CR_${c.id}`,
    name: c.name,
    head_sha: c.head_sha,
    external_id: c.external_id,
    url: `${base}/repos/${owner}/${repo}/check-runs/${c.id}`,
    html_url: `https://github.example/${owner}/${repo}/runs/${c.id}`,
    details_url: c.details_url,
    status: c.status,
    conclusion: c.conclusion,
    started_at: c.started_at,
    completed_at: c.completed_at,
    output: { ...c.output, annotations_count: c.annotations.length, annotations_url: `${base}/repos/${owner}/${repo}/check-runs/${c.id}/annotations` },
    pull_requests: [],
    // The GitHub App whose installation token wrote it.
    app: { ...(mock('checks/get', 200)['app'] as JsonObject), slug: login.replace(/\[bot\]$/, '') },
  })
  const commentJson = (issue: number, c: Comment): JsonObject => {
    const template = mock('issues/get-comment', 200)
    const user = typeof template['user'] === 'object' && template['user'] !== null ? template['user'] : {}
    return {
      ...template,
      id: c.id,
      node_id: `IC_${c.id}`,
      body: c.body,
      user: { ...user, login: c.user, type: c.user.endsWith('[bot]') ? 'Bot' : 'User' },
      created_at: c.created_at,
      updated_at: c.updated_at,
      url: `${base}/repos/${owner}/${repo}/issues/comments/${c.id}`,
      html_url: `https://github.example/${owner}/${repo}/pull/${issue}#issuecomment-${c.id}`,
      issue_url: `${base}/repos/${owner}/${repo}/issues/${issue}`,
    }
  }
  const deploymentJson = (d: Deployment): JsonObject => ({
    ...mock('repos/create-deployment', 201),
    id: d.id,
    node_id: `DE_${d.id}`,
    sha: d.sha,
    ref: d.ref,
    task: d.task,
    payload: d.payload,
    environment: d.environment,
    original_environment: d.environment,
    description: d.description,
    url: `${base}/repos/${owner}/${repo}/deployments/${d.id}`,
    statuses_url: `${base}/repos/${owner}/${repo}/deployments/${d.id}/statuses`,
  })
  const deploymentStatusJson = (d: Deployment, s: Deployment['statuses'][number]): JsonObject => ({
    ...mock('repos/create-deployment-status', 201),
    id: s.id,
    node_id: `DES_${s.id}`,
    state: s.state,
    description: s.description,
    environment: d.environment,
    log_url: s.log_url,
    target_url: s.log_url,
    environment_url: s.environment_url,
    deployment_url: `${base}/repos/${owner}/${repo}/deployments/${d.id}`,
    url: `${base}/repos/${owner}/${repo}/deployments/${d.id}/statuses/${s.id}`,
  })
  const pullJson = (p: PullRequest): JsonObject => {
    const list = mock('repos/list-pull-requests-associated-with-commit', 200) as unknown as JsonObject[] | JsonObject
    const template = (Array.isArray(list) ? list[0] : list) ?? {}
    const side = (key: 'head' | 'base'): JsonObject => {
      const t = template[key] as JsonObject
      const r = t['repo'] as JsonObject
      const name = key === 'head' && p.fromFork ? `someone/${repo}` : `${owner}/${repo}`
      // A merged pull request's head is the branch's last commit, not the merge commit.
      const sha = key === 'base' ? '0'.repeat(40) : p.merged ? 'f'.repeat(40) : p.head
      return { ...t, sha, repo: { ...r, full_name: name, fork: key === 'head' && p.fromFork } }
    }
    return {
      ...template,
      number: p.number,
      id: 5000 + p.number,
      state: p.merged ? 'closed' : 'open',
      merged_at: p.merged ? '2026-11-25T07:59:00Z' : null,
      merge_commit_sha: p.merged ? p.head : null,
      url: `${base}/repos/${owner}/${repo}/pulls/${p.number}`,
      html_url: `https://github.example/${owner}/${repo}/pull/${p.number}`,
      requested_teams: [],
      head: side('head'),
      base: side('base'),
    }
  }

  /** GitHub's own limits that the description does not state as schema (documented in the REST reference). */
  const businessRules = (operationId: string, body: JsonObject): string | undefined => {
    if (operationId === 'checks/create' || operationId === 'checks/update') {
      const output = body['output'] as JsonObject | undefined
      const annotations = (output?.['annotations'] as unknown[] | undefined) ?? []
      if (annotations.length > 50) return 'output.annotations: at most 50 per request'
      for (const field of ['summary', 'text'] as const) {
        const v = output?.[field]
        if (typeof v === 'string' && v.length > 65535) return `output.${field} is longer than 65535 characters`
      }
    }
    if (operationId === 'issues/create-comment' || operationId === 'issues/update-comment') {
      const b = body['body']
      if (typeof b === 'string' && b.length > 65536) return 'body is too long (maximum is 65536 characters)'
    }
    if (operationId === 'repos/create-commit-status') {
      const d = body['description']
      if (typeof d === 'string' && d.length > 140) return 'description is too long (maximum is 140 characters)'
    }
    return undefined
  }

  type Answer = { status: number; body: unknown; headers?: Record<string, string> }

  const handle = (operation: Operation, params: Record<string, string>, query: Record<string, string>, body: JsonObject): Answer => {
    const id = operation.operationId ?? ''
    const notFound: Answer = { status: 404, body: { message: 'Not Found', documentation_url: DOCS, status: '404' } }
    switch (id) {
      case 'checks/create': {
        const at = now()
        const c: CheckRun = {
          id: nextId++,
          name: String(body['name']),
          head_sha: String(body['head_sha']),
          status: typeof body['status'] === 'string' ? body['status'] : body['conclusion'] !== undefined ? 'completed' : 'queued',
          conclusion: typeof body['conclusion'] === 'string' ? body['conclusion'] : null,
          details_url: typeof body['details_url'] === 'string' ? body['details_url'] : null,
          external_id: typeof body['external_id'] === 'string' ? body['external_id'] : null,
          started_at: typeof body['started_at'] === 'string' ? body['started_at'] : at,
          completed_at: typeof body['completed_at'] === 'string' ? body['completed_at'] : null,
          output: { title: null, summary: null, text: null },
          annotations: [],
        }
        applyOutput(c, body)
        checkRuns.push(c)
        return { status: 201, body: checkRunJson(c) }
      }
      case 'checks/get':
      case 'checks/update': {
        const c = checkRuns.find((x) => x.id === Number(params['check_run_id']))
        if (c === undefined) return notFound
        if (id === 'checks/update') {
          for (const key of ['name', 'status', 'conclusion', 'details_url', 'external_id', 'started_at', 'completed_at'] as const) {
            const v = body[key]
            if (typeof v === 'string') (c as unknown as JsonObject)[key] = v
          }
          if (typeof body['conclusion'] === 'string') c.status = 'completed'
          applyOutput(c, body)
        }
        return { status: 200, body: checkRunJson(c) }
      }
      case 'checks/list-for-ref': {
        const ref = params['ref'] ?? ''
        let found = checkRuns.filter((c) => c.head_sha === ref)
        if (query['check_name'] !== undefined) found = found.filter((c) => c.name === query['check_name'])
        // filter=latest (the default): the most recent run of each name.
        if ((query['filter'] ?? 'latest') === 'latest') found = [...new Map(found.map((c) => [c.name, c])).values()]
        const page = paginate(found, query)
        return { status: 200, body: { total_count: found.length, check_runs: page.items.map(checkRunJson) }, headers: page.headers }
      }
      case 'repos/create-commit-status': {
        const s = {
          id: nextId++,
          sha: params['sha'] ?? '',
          state: String(body['state']),
          context: typeof body['context'] === 'string' ? body['context'] : 'default',
          description: typeof body['description'] === 'string' ? body['description'] : null,
          target_url: typeof body['target_url'] === 'string' ? body['target_url'] : null,
          at: now(),
        }
        statuses.push(s)
        return { status: 201, body: statusJson(s) }
      }
      case 'repos/list-commit-statuses-for-ref': {
        const found = statuses.filter((s) => s.sha === params['ref']).reverse()
        const page = paginate(found, query)
        return { status: 200, body: page.items.map(statusJson), headers: page.headers }
      }
      case 'repos/list-pull-requests-associated-with-commit': {
        const found = pulls.filter((p) => p.head === params['commit_sha'])
        const page = paginate(found, query)
        return { status: 200, body: page.items.map(pullJson), headers: page.headers }
      }
      case 'issues/list-comments': {
        const issue = Number(params['issue_number'])
        const page = paginate(comments.get(issue) ?? [], query)
        return { status: 200, body: page.items.map((c) => commentJson(issue, c)), headers: page.headers }
      }
      case 'issues/create-comment': {
        const issue = Number(params['issue_number'])
        if (!pulls.some((p) => p.number === issue)) return notFound
        const at = now()
        const c: Comment = { id: nextId++, body: String(body['body']), user: login, created_at: at, updated_at: at }
        const list = comments.get(issue) ?? []
        list.push(c)
        comments.set(issue, list)
        return { status: 201, body: commentJson(issue, c) }
      }
      case 'issues/get-comment':
      case 'issues/update-comment': {
        const commentId = Number(params['comment_id'])
        for (const [issue, list] of comments) {
          const c = list.find((x) => x.id === commentId)
          if (c === undefined) continue
          if (id === 'issues/update-comment') {
            if (c.user !== login) return { status: 403, body: { message: 'Resource not accessible by integration', documentation_url: DOCS, status: '403' } }
            c.body = String(body['body'])
            c.updated_at = now()
          }
          return { status: 200, body: commentJson(issue, c) }
        }
        return notFound
      }
      case 'users/get-authenticated':
        // An installation token (GITHUB_TOKEN, a GitHub App's) is no user.
        if (login.endsWith('[bot]')) return { status: 403, body: { message: 'Resource not accessible by integration', documentation_url: DOCS, status: '403' } }
        return { status: 200, body: { ...mock('users/get-authenticated', 200), login, type: 'User' } }
      case 'repos/list-deployments': {
        let found = [...deployments].reverse()
        for (const key of ['sha', 'ref', 'environment', 'task'] as const) {
          const v = query[key]
          if (v !== undefined) found = found.filter((d) => d[key] === v)
        }
        const page = paginate(found, query)
        return { status: 200, body: page.items.map(deploymentJson), headers: page.headers }
      }
      case 'repos/create-deployment': {
        const ref = String(body['ref'])
        // GitHub resolves ref to a commit; this server knows commits only as 40-hex SHAs or branch names.
        const d: Deployment = {
          id: nextId++,
          sha: /^[0-9a-f]{40}$/.test(ref) ? ref : 'f'.repeat(40),
          ref,
          environment: typeof body['environment'] === 'string' ? body['environment'] : 'production',
          description: typeof body['description'] === 'string' ? body['description'] : null,
          task: typeof body['task'] === 'string' ? body['task'] : 'deploy',
          payload: body['payload'] ?? {},
          statuses: [],
        }
        deployments.push(d)
        return { status: 201, body: deploymentJson(d) }
      }
      case 'repos/list-deployment-statuses':
      case 'repos/create-deployment-status': {
        const d = deployments.find((x) => x.id === Number(params['deployment_id']))
        if (d === undefined) return notFound
        if (id === 'repos/list-deployment-statuses') {
          const page = paginate([...d.statuses].reverse(), query)
          return { status: 200, body: page.items.map((s) => deploymentStatusJson(d, s)), headers: page.headers }
        }
        const s = {
          id: nextId++,
          state: String(body['state']),
          log_url: typeof body['log_url'] === 'string' ? body['log_url'] : `https://github.example/${owner}/${repo}/deployments`,
          environment_url: typeof body['environment_url'] === 'string' ? body['environment_url'] : `https://github.example/${owner}/${repo}`,
          description: typeof body['description'] === 'string' ? body['description'] : '',
        }
        d.statuses.push(s)
        return { status: 201, body: deploymentStatusJson(d, s) }
      }
    }
    return notFound
  }

  const statusJson = (s: (typeof statuses)[number]): JsonObject => ({
    ...mock('repos/create-commit-status', 201),
    id: s.id,
    node_id: `ST_${s.id}`,
    state: s.state,
    context: s.context,
    description: s.description,
    target_url: s.target_url,
    created_at: s.at,
    updated_at: s.at,
    url: `${base}/repos/${owner}/${repo}/statuses/${s.sha}`,
    creator: { ...(mock('repos/create-commit-status', 201)['creator'] as JsonObject), login, type: login.endsWith('[bot]') ? 'Bot' : 'User' },
  })

  /** page/per_page (default 30, at most 100) with a Link header as GitHub sends it. */
  const paginate = <T>(items: readonly T[], query: Record<string, string>): { items: readonly T[]; headers: Record<string, string> } => {
    const perPage = Math.min(Number(query['per_page'] ?? 30) || 30, 100)
    const page = Math.max(Number(query['page'] ?? 1) || 1, 1)
    const last = Math.max(Math.ceil(items.length / perPage), 1)
    const links: string[] = []
    const link = (n: number, rel: string): string => {
      const q = new URLSearchParams({ ...query, per_page: String(perPage), page: String(n) })
      return `<${base}${currentPath}?${q.toString()}>; rel="${rel}"`
    }
    if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'))
    if (page > 1) links.push(link(1, 'first'), link(page - 1, 'prev'))
    return { items: items.slice((page - 1) * perPage, page * perPage), headers: links.length === 0 ? {} : { link: links.join(', ') } }
  }
  let currentPath = ''

  const server: Server = createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      violations.push(`server error: ${error instanceof Error ? error.message : String(error)}`)
      res.writeHead(500).end()
    })
  })

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const raw = Buffer.concat(chunks).toString('utf8')
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    currentPath = url.pathname
    const method = (req.method ?? 'GET').toLowerCase()
    const query = Object.fromEntries(url.searchParams)
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]))
    let body: unknown = undefined
    const send = (answer: Answer, operationId: string | undefined): void => {
      requests.push({ method: method.toUpperCase(), path: url.pathname, query, operationId, body, status: answer.status })
      const text = answer.body === undefined ? '' : JSON.stringify(answer.body)
      res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', ...(answer.headers ?? {}) }).end(text)
    }
    if (raw !== '') {
      try {
        body = JSON.parse(raw)
      } catch {
        violations.push(`${method.toUpperCase()} ${url.pathname}: body is not JSON`)
        return send({ status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCS, status: '400' } }, undefined)
      }
    }
    const request = { method, path: url.pathname, query, headers, body }
    const operation = api.matchOperation(request)
    if (operation === undefined) {
      violations.push(`${method.toUpperCase()} ${url.pathname}: no such operation in this server's part of GitHub's API`)
      return send({ status: 404, body: { message: 'Not Found', documentation_url: DOCS, status: '404' } }, undefined)
    }
    const operationId = operation.operationId ?? ''
    if (!/^(token|Bearer) \S+$/.test(headers['authorization'] ?? '')) {
      violations.push(`${operationId}: no token`)
      return send({ status: 401, body: { message: 'Requires authentication', documentation_url: DOCS, status: '401' } }, operationId)
    }
    const validation = api.validateRequest(request, operation)
    const params = api.router.parseRequest(request, operation).params as Record<string, string>
    // Every route but GET /user is a repository's.
    const wrongRepo = operationId !== 'users/get-authenticated' && (params['owner'] !== owner || params['repo'] !== repo)
    const rule = validation.valid
      ? wrongRepo
        ? `repository ${params['owner']}/${params['repo']} is not ${owner}/${repo}`
        : businessRules(operationId, (body ?? {}) as JsonObject)
      : undefined
    if (!validation.valid || rule !== undefined) {
      const why = rule ?? JSON.stringify(validation.errors)
      violations.push(`${operationId}: ${why}`)
      return send({ status: 422, body: { message: 'Validation Failed', documentation_url: DOCS, status: '422', errors: [why] } }, operationId)
    }
    const injected = faults.find((f) => f.fault.operationId === operationId && f.left > 0)
    if (injected !== undefined) {
      injected.left--
      faultedCount.set(operationId, (faultedCount.get(operationId) ?? 0) + 1)
      return send(faultAnswer(injected.fault), operationId)
    }
    const answer = handle(operation, params, query, (body ?? {}) as JsonObject)
    if (answer.status < 300) {
      const checked = api.validateResponse(answer.body, operation, answer.status)
      if (!checked.valid) violations.push(`${operationId}: this server's answer breaks the description: ${JSON.stringify(checked.errors)}`)
    }
    send(answer, operationId)
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  return {
    url: base,
    owner,
    repo,
    violations,
    requests,
    checkRuns,
    statuses,
    deployments,
    comments: (issue) => comments.get(issue) ?? [],
    addPullRequest: (sha, number, o = {}) => void pulls.push({ number, head: sha, fromFork: o.fromFork ?? false, merged: o.merged ?? false }),
    addComments: (issue, bodies, user = 'octocat') => {
      const list = comments.get(issue) ?? []
      for (const b of bodies) {
        const at = now()
        list.push({ id: nextId++, body: b, user, created_at: at, updated_at: at })
      }
      comments.set(issue, list)
    },
    fault: (fault) => void faults.push({ fault, left: fault.times ?? Number.POSITIVE_INFINITY }),
    takeViolations: () => violations.splice(0),
    faulted: (operationId) => faultedCount.get(operationId) ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/**
 * GitHub's description marks fields like a check run's `conclusion` `nullable` next to an
 * `enum` without null, and GitHub answers null there (a run in progress). OpenAPI 3.0 means
 * null is allowed; the JSON Schema validator needs it in the enum to agree.
 */
function allowNullInNullableEnums(value: unknown): void {
  if (Array.isArray(value)) value.forEach(allowNullInNullableEnums)
  else if (typeof value === 'object' && value !== null) {
    const schema = value as Record<string, unknown>
    if (schema['nullable'] === true && Array.isArray(schema['enum']) && !schema['enum'].includes(null)) schema['enum'] = [...schema['enum'], null]
    Object.values(schema).forEach(allowNullInNullableEnums)
  }
}

function applyOutput(c: CheckRun, body: JsonObject): void {
  const output = body['output'] as JsonObject | undefined
  if (output === undefined) return
  c.output = {
    title: typeof output['title'] === 'string' ? output['title'] : c.output.title,
    summary: typeof output['summary'] === 'string' ? output['summary'] : c.output.summary,
    text: typeof output['text'] === 'string' ? output['text'] : c.output.text,
  }
  // GitHub appends annotations on update; it never replaces them.
  const annotations = output['annotations']
  if (Array.isArray(annotations)) c.annotations.push(...(annotations as JsonObject[]))
}

function faultAnswer(fault: Fault): { status: number; body: unknown; headers?: Record<string, string> } {
  if (fault.retryAfter !== undefined) {
    return {
      status: fault.status,
      body: { message: SECONDARY, documentation_url: DOCS, status: String(fault.status) },
      headers: { 'retry-after': String(fault.retryAfter) },
    }
  }
  const message = fault.status === 403 ? 'Resource not accessible by integration' : fault.status === 422 ? 'Validation Failed' : 'Server Error'
  return { status: fault.status, body: { message, documentation_url: DOCS, status: String(fault.status) } }
}
