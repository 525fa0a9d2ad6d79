// A git server on loopback speaking smart HTTP, so that source-controller's
// GitRepository fetches from it and tests push to it exactly as to a forge: the real
// `git http-backend` (CGI) behind a small node http server. Repositories are bare
// `<name>.git` directories under `root`, created in process with `createRepository`
// or from another process (a test worker) with createGitRemote below.

import { execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { randomBytes } from 'node:crypto'
import { createRepo, type Repo } from './repo.ts'

const execFileAsync = promisify(execFile)

/** Path other processes POST to (`/-/repos/<name>`) to create an empty repository. */
export const REPOS_PATH = '/-/repos/'
/** The branch every repository starts on and the helpers push. */
export const GIT_BRANCH = 'main'

export interface GitServer {
  /** Base URL (no trailing slash), e.g. `http://127.0.0.1:41236`; a repository is `${url}/<name>.git`. */
  readonly url: string
  readonly root: string
  /** Creates an empty bare repository on `main`; returns its clone URL. */
  createRepository(name: string): Promise<string>
  close(): Promise<void>
}

// A name is one path segment git and URLs take as is.
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/

export async function startGitServer(options: { root: string; port?: number }): Promise<GitServer> {
  const root = options.root
  await mkdir(root, { recursive: true })
  let url = ''

  async function createRepository(name: string): Promise<string> {
    if (!NAME.test(name)) throw new GitServerError(400, `repository name '${name}' must be lower-case letters, digits and '-'`)
    const dir = join(root, `${name}.git`)
    if (existsSync(dir)) throw new GitServerError(409, `repository ${name} already exists`)
    await execFileAsync('git', ['init', '-q', '--bare', `--initial-branch=${GIT_BRANCH}`, dir], { env: gitEnv() })
    return `${url}/${name}.git`
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof GitServerError ? error.status : 500
      if (res.headersSent) res.destroy(error instanceof Error ? error : new Error(String(error)))
      else send(res, status, error instanceof Error ? error.message : String(error))
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    if (path.startsWith(REPOS_PATH)) {
      if (req.method !== 'POST') return send(res, 405, 'method not allowed')
      const cloneUrl = await createRepository(path.slice(REPOS_PATH.length))
      return send(res, 201, JSON.stringify({ url: cloneUrl }), 'application/json')
    }
    return httpBackend(root, req, res)
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  return {
    url,
    root,
    createRepository,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

class GitServerError extends Error {
  override name = 'GitServerError'
  readonly status: number
  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
}

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

// git never reads the machine's or the user's configuration here.
function gitEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: '/nonexistent' }
}

/** Runs one request through `git http-backend` as a CGI script (RFC 3875). */
function httpBackend(root: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost')
  const env: NodeJS.ProcessEnv = {
    ...gitEnv(),
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_ADDR: '127.0.0.1',
    // http-backend serves receive-pack (push) only to an authenticated user.
    REMOTE_USER: 'test',
  }
  // Without CONTENT_LENGTH (a chunked push) http-backend reads the body to its end.
  if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = req.headers['content-length']
  // Content-Encoding (gzip) and Git-Protocol reach http-backend as HTTP_* variables.
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') env[`HTTP_${name.toUpperCase().replaceAll('-', '_')}`] = value
  }

  return new Promise((resolve, reject) => {
    const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    const stderr: string[] = []
    child.stderr.setEncoding('utf8').on('data', (text: string) => stderr.push(text))
    child.stdin.on('error', () => {}) // http-backend may answer (an error) before reading the body
    req.pipe(child.stdin)

    let head = Buffer.alloc(0)
    let bodyStarted = false
    child.stdout.on('data', (chunk: Buffer) => {
      if (bodyStarted) {
        res.write(chunk)
        return
      }
      head = Buffer.concat([head, chunk])
      const end = headerEnd(head)
      if (end === undefined) return
      const { status, headers } = parseCgiHeaders(head.subarray(0, end.at).toString('latin1'))
      res.writeHead(status, headers)
      bodyStarted = true
      const rest = head.subarray(end.at + end.length)
      if (rest.length > 0) res.write(rest)
    })
    child.once('error', reject)
    child.once('close', (code) => {
      if (!bodyStarted) {
        reject(new Error(`git http-backend exited with ${code} before answering: ${stderr.join('').trim()}`))
        return
      }
      res.end()
      resolve()
    })
  })
}

function headerEnd(buffer: Buffer): { at: number; length: number } | undefined {
  const crlf = buffer.indexOf('\r\n\r\n')
  const lf = buffer.indexOf('\n\n')
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { at: crlf, length: 4 }
  if (lf !== -1) return { at: lf, length: 2 }
  return undefined
}

function parseCgiHeaders(text: string): { status: number; headers: Record<string, string> } {
  let status = 200
  const headers: Record<string, string> = {}
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon === -1) continue
    const name = line.slice(0, colon).trim()
    const value = line.slice(colon + 1).trim()
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500
    else headers[name] = value
  }
  return { status, headers }
}

// --- the tests' side ----------------------------------------------------------------

export interface GitRemote {
  /** Clone URL on the loopback server, e.g. `http://127.0.0.1:41236/app-1a2b3c4d.git`. */
  readonly url: string
  /** The local working clone commits are made in. */
  readonly work: Repo
  /**
   * Writes files (path → content), removes `remove`, commits and pushes `main`;
   * returns the pushed commit's SHA.
   */
  push(files: Readonly<Record<string, string>>, message?: string, options?: { remove?: readonly string[] }): Promise<string>
  cleanup(): void
}

/**
 * Creates a repository on the git server at `serverUrl` (over HTTP, so it works from any
 * process) and a local working clone to push to it from.
 */
export async function createGitRemote(serverUrl: string, name = `repo-${randomBytes(4).toString('hex')}`): Promise<GitRemote> {
  const response = await fetch(`${serverUrl}${REPOS_PATH}${name}`, { method: 'POST' })
  const body = await response.text()
  if (response.status !== 201) throw new Error(`creating git repository ${name}: HTTP ${response.status}: ${body}`)
  const { url } = JSON.parse(body) as { url: string }
  const work = createRepo('hrt-git-')
  work.git('remote', 'add', 'origin', url)
  return {
    url,
    work,
    async push(files, message = 'Update', options = {}) {
      work.write(files)
      for (const path of options.remove ?? []) work.remove(path)
      const sha = work.commit(message)
      // Asynchronous: the server may run in this very process (the demo, a test's own cluster).
      await execFileAsync('git', ['push', '-q', 'origin', `HEAD:refs/heads/${GIT_BRANCH}`], { cwd: work.dir, env: { ...process.env, ...gitEnv() } })
      return sha
    },
    cleanup: () => work.cleanup(),
  }
}
