// Runs a workflow under act (nektos/act, a real Actions runner built from its Go module by
// test/cluster/build.sh) on this machine's host, offline: no container engine
// (`-P ubuntu-latest=-self-hosted`), no cache server, an empty HOME, Node 24 first on PATH (act
// starts `node24` actions with whatever `node` it finds), and GITHUB_API_URL at the loopback
// GitHub API. `uses:` of this repository (the action, trigger.yml, fleet.yml) resolve to a copy
// of its action.yml, dist/ and .github/; actions/checkout is skipped by act itself (the workspace
// already is the repository, history included); the artifact actions, which act cannot fetch
// offline, resolve to the stand-ins in test/act/. act's JSON log is parsed into what the runner
// saw: each job's result, each step's outputs, the job summaries and every printed line.

import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runProcess } from './action.ts'
import { ensureBinaries, REPO_ROOT } from './cluster.ts'
import type { GitHubApi } from './github-api.ts'
import { createRepo, type Repo } from './repo.ts'
import { workflowCommands } from './workflow-commands.ts'

/** The repository whose `uses:` resolve to this clone (action.yml's home on GitHub). */
export const ACTION_REPOSITORY = 'acme/helmrelease-trigger'
/** The token act hands every job as secrets.GITHUB_TOKEN / github.token. */
export const ACT_TOKEN = 'ghs_act_token'

export interface ActOptions {
  /** The checked-out repository: act's working directory, copied into each job's workspace. */
  readonly repo: string
  /** The workflow file, relative to repo. */
  readonly workflow: string
  readonly event: string
  /** The event payload (github.event); workflow_dispatch inputs go in its `inputs`. */
  readonly payload: unknown
  readonly api: GitHubApi
  readonly secrets?: Readonly<Record<string, string>>
}

/** One line of act's JSON log (logrus fields). */
export interface ActEntry {
  readonly msg: string
  readonly level?: string
  readonly jobID?: string
  readonly job?: string
  readonly matrix?: Readonly<Record<string, unknown>>
  readonly stepID?: readonly string[]
  readonly stage?: string
  /** A line a step printed. */
  readonly raw_output?: boolean
  /** A workflow command act took from a step's output or files (set-output, summary, error …). */
  readonly command?: string
  readonly name?: string
  readonly arg?: string
  readonly raw?: string
  readonly content?: string
  readonly jobResult?: string
  readonly stepResult?: string
}

export interface ActRun {
  readonly exitCode: number
  readonly entries: readonly ActEntry[]
  /** act's stderr (its own errors; the job logs are in entries). */
  readonly stderr: string
  /** Ids of the jobs act reported a result for (a called workflow's jobs by their own ids), in order. */
  jobIds(): string[]
  /** The job's results (one per matrix entry) as act reported them: success, failure, skipped. */
  jobResults(jobId: string): string[]
  /** What the job's steps printed, line by line, workflow commands as printed. */
  output(jobId: string): string
  /** Outputs a step of the job set, by step id (the last value of each name). */
  stepOutputs(jobId: string, stepId: string): Record<string, string>
  /** The job summaries the job's steps wrote ($GITHUB_STEP_SUMMARY), in order. */
  summaries(jobId: string): string[]
  /**
   * Printed workflow commands that act names differently from GitHub's runner: act matches
   * `::name props::data` greedily, so a `::` inside the data splits there instead. Ours must read
   * the same under both.
   */
  misreadCommands(): string[]
  /** The whole run as text, for failure messages. */
  readonly text: string
}

/** A repository act takes for the API server's owner/repo (act reads github.repository from origin). */
export function createActRepo(api: GitHubApi): Repo {
  const repo = createRepo('hrt-act-repo-')
  repo.git('remote', 'add', 'origin', `https://github.com/${api.owner}/${api.repo}.git`)
  return repo
}

/** A pull_request event of the API server's repository from its own branch (not a fork). */
export function pullRequestEvent(api: GitHubApi, number: number, base: string, head: string): unknown {
  const repository = { full_name: `${api.owner}/${api.repo}`, name: api.repo, owner: { login: api.owner } }
  return {
    action: 'synchronize',
    number,
    pull_request: { number, base: { sha: base, ref: 'main', repo: repository }, head: { sha: head, ref: 'change', repo: repository } },
    repository,
  }
}

/** A push event to main, before → after. */
export function pushEvent(api: GitHubApi, before: string, after: string): unknown {
  return { ref: 'refs/heads/main', before, after, repository: { full_name: `${api.owner}/${api.repo}`, name: api.repo, owner: { login: api.owner } } }
}

let actBinary: Promise<string> | undefined

/** act, built once (cached under ~/.cache by build.sh). */
function act(): Promise<string> {
  actBinary ??= ensureBinaries(['act']).then((paths) => {
    if (paths.act === undefined) throw new Error('test/cluster/build.sh built no act')
    return paths.act
  })
  return actBinary
}

/** `owner/repo@ref` of every action and reusable workflow the repository's workflows use. */
function usedRepositories(): Set<string> {
  const used = new Set<string>()
  for (const dir of ['.github/workflows', 'examples']) {
    for (const file of readdirSync(join(REPO_ROOT, dir)).filter((f) => /\.ya?ml$/.test(f))) {
      const text = readFileSync(join(REPO_ROOT, dir, file), 'utf8')
      for (const m of text.matchAll(/^\s*(?:-\s+)?uses:\s*([\w.-]+\/[\w.-]+)(?:\/[^@\s]*)?@([\w.-]+)/gm)) used.add(`${m[1]}@${m[2]}`)
    }
  }
  return used
}

/** --local-repository flags: ours to a copy of this clone, the artifact actions to the stand-ins. */
function localRepositories(actionCopy: string): string[] {
  const flags: string[] = []
  for (const used of usedRepositories()) {
    const repository = used.slice(0, used.indexOf('@'))
    const dir =
      repository === ACTION_REPOSITORY
        ? actionCopy
        : repository === 'actions/upload-artifact' || repository === 'actions/download-artifact'
          ? join(REPO_ROOT, 'test', 'act', repository.slice('actions/'.length))
          : undefined
    if (dir !== undefined) flags.push('--local-repository', `${used}=${dir}`)
  }
  return flags
}

export async function runAct(options: ActOptions): Promise<ActRun> {
  const binary = await act()
  const dir = mkdtempSync(join(tmpdir(), 'hrt-act-'))
  try {
    // What a `uses:` of this repository checks out: the product files, not node_modules.
    const actionCopy = join(dir, 'action')
    for (const part of ['action.yml', 'dist', '.github']) cpSync(join(REPO_ROOT, part), join(actionCopy, part), { recursive: true })
    const home = join(dir, 'home')
    const artifacts = join(dir, 'artifacts')
    const eventFile = join(dir, 'event.json')
    writeFileSync(eventFile, JSON.stringify(options.payload))
    const secretFile = join(dir, 'secrets.env')
    writeFileSync(secretFile, dotenv({ GITHUB_TOKEN: ACT_TOKEN, ...options.secrets }))
    const args = [
      options.event,
      '--workflows',
      options.workflow,
      '--eventpath',
      eventFile,
      '--platform',
      'ubuntu-latest=-self-hosted',
      '--platform',
      'self-hosted=-self-hosted',
      '--no-cache-server',
      '--json',
      '--env',
      `GITHUB_API_URL=${options.api.url}`,
      '--env',
      `ARTIFACT_STORE=${artifacts}`,
      '--secret-file',
      secretFile,
      ...localRepositories(actionCopy),
    ]
    const env: Record<string, string> = {
      // Node 24 (node_modules/.bin/node, the node@24 package) before the machine's node.
      PATH: `${join(REPO_ROOT, 'node_modules', '.bin')}:${process.env['PATH'] ?? ''}`,
      HOME: home,
      ACT_DISABLE_VERSION_CHECK: '1',
    }
    const { exitCode, stdout, stderr } = await runProcess(binary, args, options.repo, env)
    return actRun(exitCode, stdout, stderr)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Secrets as act reads --secret-file (godotenv): single-quoted values are taken literally, newlines
 * included. Not act's environment: on the host act hands its whole environment to every step.
 */
function dotenv(secrets: Readonly<Record<string, string>>): string {
  return Object.entries(secrets)
    .map(([name, value]) => {
      if (value.includes("'")) throw new Error(`secret ${name}: a single quote cannot be passed to act's secret file`)
      return `${name}='${value}'\n`
    })
    .join('')
}

function actRun(exitCode: number, stdout: string, stderr: string): ActRun {
  const entries: ActEntry[] = []
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue
    try {
      entries.push(JSON.parse(line) as ActEntry)
    } catch {
      entries.push({ msg: line })
    }
  }
  const of = (jobId: string): ActEntry[] => entries.filter((e) => e.jobID === jobId)
  // act logs a step's lines, and the commands it took from them, each with its line ending.
  const line = (e: ActEntry): string | undefined =>
    e.raw_output === true ? e.msg.replace(/\r?\n$/, '') : e.command !== undefined && e.raw !== undefined ? e.raw.replace(/\r?\n$/, '') : undefined
  return {
    exitCode,
    entries,
    stderr,
    text: [...entries.map((e) => `[${e.jobID ?? '-'}] ${line(e) ?? e.msg}`), stderr].join('\n'),
    jobIds: () => [...new Set(entries.filter((e) => e.jobResult !== undefined).map((e) => e.jobID ?? ''))],
    jobResults: (jobId) => of(jobId).flatMap((e) => (e.jobResult === undefined ? [] : [e.jobResult])),
    output: (jobId) =>
      of(jobId)
        .flatMap((e) => {
          const l = line(e)
          return l === undefined ? [] : [l]
        })
        .join('\n'),
    stepOutputs: (jobId, stepId) =>
      Object.fromEntries(
        of(jobId)
          .filter((e) => e.command === 'set-output' && e.stepID?.[0] === stepId && e.name !== undefined)
          .map((e) => [e.name ?? '', e.arg ?? '']),
      ),
    misreadCommands: () =>
      entries.flatMap((e) => {
        const printed = line(e)
        if (printed === undefined || e.raw_output === true) return []
        const runner = workflowCommands(printed)[0]?.name
        return runner === e.command ? [] : [`${printed} (act: ${e.command ?? ''}, runner: ${runner ?? 'no command'})`]
      }),
    summaries: (jobId) => of(jobId).flatMap((e) => (e.command === 'summary' && e.content !== undefined ? [e.content] : [])),
  }
}
