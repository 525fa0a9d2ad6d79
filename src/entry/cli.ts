// The CLI: the same engine and the same settings as the action, inputs given as flags.
//   helmrelease-trigger plan    [--base REV] [--head REV] [--full-sync] [--json] …
//   helmrelease-trigger trigger [--kubeconfig FILE] [--context NAME] [--dry-run] …
//   helmrelease-trigger discover [--from-git] [--namespaces NS] …
//   helmrelease-trigger recover [--namespaces NS] [--recover-max-attempts N] …
//   helmrelease-trigger watch [--namespaces NS] [--debounce 2s] [--metrics-address :8080] …
//   helmrelease-trigger drift [--namespaces NS] [--selector SEL] [--drift-action report|fail|correct] …

import { readFileSync } from 'node:fs'
import { ConfigurationError, messageOf } from '../lib/errors.ts'
import type { GitReader } from '../git/reader.ts'
import { parseSettings } from '../settings.ts'
import type { RunContext } from '../modes/trigger/pipeline.ts'
import type { ModeResult } from '../modes/mode.ts'
import type { Logger } from '../engine/ports.ts'
import { jsonText, logLine, logText } from '../lib/untrusted.ts'
import { createSandbox, type Sandbox } from '../sandbox/sandbox.ts'
import type { EntryMode, EntryPorts } from './entry-ports.ts'

const BOOLEAN_INPUTS = new Set([
  'full-sync',
  'force',
  'reset',
  'discover',
  'wait-for-apply',
  'apply',
  'wait',
  'dry-run',
  'allow-pull-requests',
  'semantic-digest',
  'from-git',
  'leader-election',
  'flux-attribution',
  'diff',
])
const VALUE_INPUTS = new Set([
  'cluster-root',
  'git-repository',
  'kustomize-path',
  'kubeconfig-encoding',
  'context',
  'base',
  'head',
  'paths',
  'annotation-prefix',
  'default-namespace',
  'cross-namespace-targets',
  'digest-key-namespace',
  'timeout',
  'max-concurrency',
  'fail-on',
  'namespaces',
  'recover-patterns',
  'recover-max-attempts',
  'recover-backoff',
  'drift-action',
  'drift-ignore',
  'selector',
  'debounce',
  'watch-duration',
  'metrics-address',
  'log-format',
  'leader-election-namespace',
  'leader-election-name',
  'recover-interval',
  'github-token',
  'github-report',
  'check-name',
  'deployment-environment',
  'clusters',
  'cluster',
  'waves',
  'max-parallel',
  'cluster-contexts',
  'result-file',
  'results',
  'chart-cache',
  'kube-version',
])
const CLI_FLAGS = new Set(['repo', 'kubeconfig', 'json', 'help', 'plan', 'github-repository'])
const REPEATABLE = new Set(['paths', 'namespaces', 'cross-namespace-targets', 'recover-patterns', 'drift-ignore', 'clusters', 'waves', 'cluster-contexts'])
const COMMANDS = ['plan', 'trigger', 'discover', 'recover', 'drift', 'watch', 'fleet', 'fleet-summary'] as const

const USAGE = `Usage: helmrelease-trigger <plan|trigger|fleet|fleet-summary|discover|recover|drift|watch> [flags]

  plan      show which HelmReleases a commit range would trigger (no cluster needed); with
            --clusters, per cluster of the fleet, saved with --plan FILE
  trigger   wait for the config to reach the cluster, patch the releases, wait for the outcome;
            with --plan FILE --cluster NAME, only that cluster's part of a saved plan
  fleet     plan once (or --plan FILE) and trigger every cluster with work over its kubeconfig
            context, --max-parallel at once, wave after wave; one fleet summary
  fleet-summary  the fleet summary from a plan file and a directory of cluster results
  discover  label the HelmReleases that use valuesFrom (unlabel those that stopped) and lint
            the wiring; --from-git lints the repository's manifests alone (no cluster)
  recover   re-trigger releases that failed for a transient reason or stalled, within a budget
  watch     run until stopped: trigger the releases of any labelled ConfigMap/Secret that changes
            in the cluster (debounced, leader-elected, /healthz /readyz /metrics)
  drift     compare every object of each release's Helm manifest with the live one; report,
            fail, or correct (a forced upgrade by helm-controller, then a re-check)

Flags (the action's inputs):
  --base REV --head REV        range to diff (default: HEAD's parent..HEAD)
  --full-sync                  every labelled source at head instead of a diff
  --diff                       plan: render each planned release at base and head (Helm's engine,
                               sandboxed) and show what the upgrade will change in Kubernetes
  --chart-cache DIR            where fetched charts are kept (default ~/.cache/helmrelease-trigger/charts)
  --kube-version v1.36.0       the Kubernetes version chart templates see in the diff
  --paths GLOB                 manifest files to read, repeatable (default **/*.yaml and **/*.yml)
  --cluster-root DIR           Flux's path for this cluster (clusters/production): render from there
  --git-repository NS/NAME     the Flux GitRepository that fetches this repository
  --kustomize-path FILE        deprecated and ignored: rendering is built in and sandboxed
  --kubeconfig FILE            kubeconfig file (default $KUBECONFIG, ~/.kube/config, in-cluster)
  --context NAME               kubeconfig context
  --annotation-prefix P        default nebius.ai
  --default-namespace NS       default flux-system
  --cross-namespace-targets A=B  a source in A may name releases in B (repeatable; * for any); default its own namespace only
  --digest-key-namespace NS    where the key of Secret digests is kept (default flux-system)
  --force --reset --dry-run    Flux force/reset tokens; server-side dry run
  --no-discover --no-wait --no-wait-for-apply --apply
  --timeout 5m --max-concurrency 10 --fail-on error|warning|never --no-semantic-digest
  --namespaces NS              discover/recover: namespaces to scan, repeatable (default all)
  --from-git                   discover: lint the repository at HEAD (or --head) only
  --recover-patterns RE        recover: transient-failure regex, repeatable (default built-in list)
  --recover-max-attempts 3 --recover-backoff 5m
  --debounce 2s                watch: wait for more changes before patching (0: at once)
  --watch-duration 1h          watch: stop after this long (default: until SIGTERM/SIGINT)
  --metrics-address :8080      watch: serve /healthz, /readyz and /metrics (default off)
  --log-format text|json       watch: one plain or JSON line per event
  --leader-election            watch: patch only while holding the Lease (several replicas)
  --leader-election-namespace flux-system --leader-election-name helmrelease-trigger-watch
  --recover-interval 10m       watch: also run recover this often
  --drift-action report|fail|correct   drift: what to do about drift (default report)
  --drift-ignore RULE          drift: [Kind/name/]path never reported, repeatable
  --selector SEL               drift: label selector of the HelmReleases to check
  --github-token TOKEN         trigger, fleet, fleet-summary: report to GitHub (check run, pull-request comment); default $GITHUB_TOKEN
  --github-repository O/R      trigger: the GitHub repository to report to (default $GITHUB_REPOSITORY)
  --github-report check,comment|none --check-name NAME --deployment-environment ENV
  --no-flux-attribution        do not stamp event.toolkit.fluxcd.io/commit on patched releases
  --clusters NAME=PATH         plan/fleet: a cluster and its Flux root, repeatable; or 'discover' (clusters/*)
  --waves 'GLOB …'             plan/fleet: one wave per flag, in order, e.g. --waves staging --waves 'prod-*'
  --plan FILE                  plan: write the fleet plan; trigger/fleet/fleet-summary: read it (no re-plan)
  --cluster NAME               trigger: execute only this cluster's part of --plan
  --max-parallel 4             fleet: clusters at once
  --cluster-contexts NAME=CTX  fleet: kubeconfig context of a cluster (default: the context named like it)
  --result-file FILE           trigger --cluster: write the cluster's result (for fleet-summary)
  --results DIR                fleet-summary: directory of the clusters' result files
  --repo DIR                   repository (default: current directory)
  --json                       print the result as JSON
`

export interface CliIo {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
}

interface ParsedArgs {
  readonly command: string
  readonly inputs: ReadonlyMap<string, string>
  readonly flags: ReadonlyMap<string, string>
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const [command = '', ...rest] = argv
  const inputs = new Map<string, string>()
  const flags = new Map<string, string>()
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] ?? ''
    if (!arg.startsWith('--')) throw new ConfigurationError(`Unexpected argument '${arg}'. Run 'helmrelease-trigger --help'.`)
    const [rawName = '', inline] = arg.slice(2).split(/=(.*)/s, 2)
    const negated = rawName.startsWith('no-') && BOOLEAN_INPUTS.has(rawName.slice(3))
    const name = negated ? rawName.slice(3) : rawName
    if (BOOLEAN_INPUTS.has(name) || name === 'json' || name === 'help') {
      const target = BOOLEAN_INPUTS.has(name) ? inputs : flags
      target.set(name, inline ?? String(!negated))
    } else if (VALUE_INPUTS.has(name) || CLI_FLAGS.has(name)) {
      // A following flag is not a value: `--context --dry-run` is a missing context.
      const next = rest[i + 1]
      const value = inline ?? (next !== undefined && !next.startsWith('--') ? rest[++i] : undefined)
      if (value === undefined) throw new ConfigurationError(`Flag --${name} needs a value.`)
      const target = VALUE_INPUTS.has(name) ? inputs : flags
      // --paths, --namespaces and --recover-patterns may repeat: the input is one item per line.
      const previous = REPEATABLE.has(name) ? target.get(name) : undefined
      target.set(name, previous === undefined ? value : `${previous}\n${value}`)
    } else {
      throw new ConfigurationError(`Unknown flag --${name}. Run 'helmrelease-trigger --help'.`)
    }
  }
  return { command, inputs, flags }
}

/** Runs the CLI; returns the exit code (0 ok, 1 failed per fail-on, 2 usage or configuration error). */
export async function main(argv: readonly string[], raw: CliIo): Promise<number> {
  // Reports quote the repository and the cluster: every line printed is made safe (see untrusted.ts).
  const io: CliIo = { ...raw, out: (text) => raw.out(text), err: (text) => raw.err(logText(text)) }
  let sandbox: Sandbox | undefined
  try {
    const args = parseArgs(argv)
    if (args.command === '' || args.command === '--help' || args.command === 'help' || args.flags.has('help')) {
      io.out(USAGE)
      return 0
    }
    const command = COMMANDS.find((c) => c === args.command)
    if (command === undefined) throw new ConfigurationError(`Unknown command '${args.command}'; expected ${COMMANDS.join(', ')}.`)
    const kubeconfigFile = args.flags.get('kubeconfig')
    const settings = parseSettings((name) => {
      if (name === 'mode') return command
      if (name === 'kubeconfig') return kubeconfigFile === undefined ? '' : readKubeconfig(kubeconfigFile)
      // The environment is the safer place for a token: a flag shows in the process list.
      if (name === 'github-token') return args.inputs.get(name) ?? io.env['GITHUB_TOKEN'] ?? ''
      if (name === 'plan-file') return args.flags.get('plan') ?? ''
      // The CLI renders charts only when asked (--diff): it may fetch them over the network.
      if (name === 'diff') return args.inputs.get(name) ?? 'false'
      return args.inputs.get(name) ?? ''
    })
    const log: Logger = { info: (m) => io.err(`${m}\n`), warning: (m) => io.err(`warning: ${m}\n`) }
    for (const deprecation of settings.deprecations) log.warning(deprecation.replace("Input 'kustomize-path'", 'Flag --kustomize-path'))
    // No event: nothing started by a pull request, so no refusal.
    const context: RunContext = { eventName: 'cli', event: {}, sha: settings.head ?? 'HEAD', runUrl: undefined, refused: undefined }
    sandbox = createSandbox()
    const ports: EntryPorts = {
      sandbox,
      env: io.env,
      githubEnv: { ...io.env, GITHUB_REPOSITORY: args.flags.get('github-repository') ?? io.env['GITHUB_REPOSITORY'] },
      mask: () => undefined,
      log,
      git: async () => (await import('../git/reader.ts')).createGitReader({ cwd: args.flags.get('repo') ?? io.cwd }),
      context,
      contextAt: async (git) => (settings.head !== undefined ? context : { ...context, sha: await headOf(await git()) }),
      watchSink: { write: (level, line) => (level === 'warning' || level === 'error' ? io.err : io.out)(`${logLine(line)}\n`) },
    }
    return print(await (await modeOf(command)).run(settings, ports), args.flags.get('json') === 'true', io)
  } catch (error) {
    io.err(`error: ${messageOf(error)}\n`)
    return error instanceof ConfigurationError ? 2 : 1
  } finally {
    await sandbox?.close()
  }
}

/** The one print path: the text report or --json on stdout, the failure on stderr; the exit code. */
function print(result: ModeResult, json: boolean, io: CliIo): number {
  const body = json ? (result.json === undefined ? '' : `${jsonText(result.json, 2)}\n`) : logText(result.text)
  if (body !== '') io.out(body)
  if (result.failure !== undefined) io.err(`error: ${result.failure}\n`)
  return result.failure === undefined ? 0 : 1
}

/**
 * The command's row of the table, imported once the command is known: watch, which runs for days,
 * never evaluates (nor holds in memory) the other modes' code.
 */
async function modeOf(command: (typeof COMMANDS)[number]): Promise<EntryMode> {
  return command === 'watch' ? (await import('./watch-mode.ts')).watch : (await import('./modes.ts')).MODES[command]
}

async function headOf(git: GitReader): Promise<string> {
  const head = await git.resolve('HEAD')
  if (head === undefined) throw new ConfigurationError('The repository has no commit at HEAD.')
  return head
}

function readKubeconfig(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigurationError(`Cannot read the kubeconfig file ${file}: ${messageOf(error)}.`)
  }
}
