// The demo: the GitOps loop on a local cluster with the real Flux controllers. A Flux
// repository on the loopback git server (a HelmRelease reading values generated from
// values.yaml), bootstrapped as `flux bootstrap` would; then a commit that edits
// values.yaml is pushed, kustomize-controller applies it, and the bundled action, run the
// way the Actions runner runs it on that push, waits for the apply, triggers and reports
// helm-controller's upgrade to a loopback GitHub API (checked against GitHub's description).
// Ends on the report as the CLI prints it, where GitHub shows it, and a screenshot of that.
//
//   npm run demo            (after scripts/setup.sh --demo; scripts/demo.sh does both)

import { mkdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { runAction } from '../test/support/action.ts'
import { FLUX_ENV, startCluster } from '../test/support/cluster.ts'
import {
  GIT_REPOSITORY,
  HELM_RELEASE,
  KUSTOMIZATION,
  REQUESTED_AT,
  gitRepository,
  gitRevision,
  isAppliedAt,
  isReady,
  kustomization,
  type FluxObject,
} from '../test/support/flux.ts'
import { createGitRemote } from '../test/support/git-server.ts'
import { startGitHubApi } from '../test/support/github-api.ts'
import { CLUSTER_ROOT, GIT_REPOSITORY_NAME, fluxTree, generatedValuesApp } from '../test/support/gitops.ts'
import { waitFor } from '../test/support/kube.ts'
import { openReportPage } from '../test/support/report-page.ts'
import { REPO_ROOT } from '../test/support/cluster.ts'

const NS = 'demo'
const values = (greeting: string): string => `replicas: 2\ngreeting: ${greeting}\n`

function step(text: string): void {
  process.stdout.write(`\n▶ ${text}\n`)
}

const PULL_REQUEST = 1
const SCREENSHOT = join(REPO_ROOT, 'artifacts', 'demo-report.png')
const GROUP = '::group::The report (as the CLI prints it)'

/** The lines of the action's log between the report group's start and end. */
function reportOf(log: string): string {
  const lines = log.split('\n')
  const start = lines.indexOf(GROUP)
  const end = lines.indexOf('::endgroup::', start)
  return start < 0 || end < 0 ? log : `${lines.slice(start + 1, end).join('\n')}\n`
}

// setup.sh --demo said what it built; the cluster's own progress lines are the rest.
const clusterLog = (line: string): void => void (/ cached \(/.test(line) || process.stderr.write(`  [cluster] ${line}\n`))
// The demo shows the default Flux, the one setup --demo builds, whatever the environment pins.
delete process.env[FLUX_ENV]
const cluster = await startCluster({ flux: true, ociRegistry: false, log: clusterLog })
const github = await startGitHubApi({ owner: 'acme', repo: 'fleet' })
const remote = await createGitRemote(cluster.gitServerUrl, 'fleet')
try {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api)
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  const apply = (coords: { group: string; version: string; plural: string }, object: FluxObject) =>
    custom.patchNamespacedCustomObject(
      { ...coords, namespace: NS, name: object.metadata.name, body: object, fieldManager: 'demo', force: true },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )
  const get = async (coords: { group: string; version: string; plural: string }, name: string) =>
    (await custom.getNamespacedCustomObject({ ...coords, namespace: NS, name })) as FluxObject
  // What a push webhook (Flux's Receiver) does: source-controller fetches now, not at its interval.
  const fetchNow = () =>
    custom.patchNamespacedCustomObject(
      { ...GIT_REPOSITORY, namespace: NS, name: GIT_REPOSITORY_NAME, body: { metadata: { annotations: { [REQUESTED_AT]: new Date().toISOString() } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
  const appliedAt = (sha: string, name = 'apps') =>
    waitFor(async () => isAppliedAt(await get(KUSTOMIZATION, name), gitRevision(sha)), { timeoutMs: 120_000, message: `Kustomization ${name} at ${sha}` })

  step(`A Flux repository on the loopback git server (${remote.url}); Flux bootstrapped on ${CLUSTER_ROOT}`)
  await cluster.createNamespace(NS)
  const first = await remote.push(
    { ...fluxTree({ namespace: NS, chartRepoUrl: cluster.chartRepoUrl }), ...generatedValuesApp(NS, values('hello')) },
    'podinfo: initial values',
  )
  process.stdout.write(remote.work.git('ls-files') + '\n')
  await apply(GIT_REPOSITORY, gitRepository({ namespace: NS, name: GIT_REPOSITORY_NAME, url: remote.url }))
  await apply(KUSTOMIZATION, kustomization({ namespace: NS, name: 'flux-system', source: GIT_REPOSITORY_NAME, path: `./${CLUSTER_ROOT}` }))
  await appliedAt(first, 'flux-system')
  await appliedAt(first)
  await waitFor(async () => isReady(await get(HELM_RELEASE, 'podinfo')), { timeoutMs: 120_000, message: 'podinfo Ready' })
  step('kustomize-controller applied it; helm-controller installed "podinfo" with greeting=hello (revision 1)')

  step('A commit changes greeting to "bonjour" in apps/podinfo/values.yaml; its pull request is merged and pushed')
  const after = await remote.push({ 'apps/podinfo/values.yaml': values('bonjour') }, 'podinfo: say bonjour')
  process.stdout.write(remote.work.git('show', '--format=  %h %s', after) + '\n')
  github.addPullRequest(after, PULL_REQUEST, { merged: true })

  step('The action runs on the push: it renders the repository as Flux applies it, waits for kustomize-controller, triggers, waits for helm-controller')
  const run = runAction({
    workspace: remote.work.dir,
    eventName: 'push',
    event: { before: first, after, ref: 'refs/heads/main' },
    sha: after,
    inputs: {
      kubeconfig: readFileSync(cluster.kubeconfigPath, 'utf8'),
      timeout: '2m',
      'cluster-root': CLUSTER_ROOT,
      'git-repository': `${NS}/${GIT_REPOSITORY_NAME}`,
      'github-token': 'ghs_demo',
    },
    env: { GITHUB_API_URL: github.url },
  })
  await fetchNow()
  const [result] = await Promise.all([run, appliedAt(after)])
  const deployed = await core.readNamespacedConfigMap({ namespace: NS, name: 'podinfo' })
  step(`helm-controller upgraded podinfo: the ConfigMap it deployed says greeting=${deployed.data?.['greeting'] ?? '?'}`)

  step(`The report (the action's exit code ${result.exitCode}), as the CLI prints it`)
  process.stdout.write(reportOf(result.stdout))

  const check = github.checkRuns[0]
  const comment = github.comments(PULL_REQUEST)[0]
  let screenshot: string
  try {
    const page = await openReportPage()
    try {
      await page.show({
        'Job summary': result.summary,
        ...(check === undefined ? {} : { 'Check run': `# ${check.output.title ?? ''}\n\n${check.output.summary ?? ''}\n${check.output.text ?? ''}` }),
        ...(comment === undefined ? {} : { 'Pull-request comment': comment.body }),
      })
      mkdirSync(join(REPO_ROOT, 'artifacts'), { recursive: true })
      await page.screenshot(SCREENSHOT)
      screenshot = `as a browser shows them: ${relative(process.cwd(), SCREENSHOT)}`
    } finally {
      await page.close()
    }
  } catch (error) {
    screenshot = `no screenshot (${error instanceof Error ? error.message : String(error)})`
  }
  const places = [
    'the job summary',
    ...(check === undefined ? [] : [`the check run "${check.name}" (${check.conclusion ?? check.status})`]),
    ...(comment === undefined ? [] : [`a comment on pull request #${PULL_REQUEST}`]),
  ]
  const listed = places.length > 1 ? `${places.slice(0, -1).join(', ')} and ${places.at(-1) ?? ''}` : places.join('')
  process.stdout.write(`\nOn GitHub the same report is ${listed}; ${screenshot}\n`)
  if (result.exitCode !== 0 || github.violations.length > 0) {
    process.stderr.write(result.stdout)
    for (const v of github.violations) process.stderr.write(`GitHub would have refused: ${v}\n`)
    process.exitCode = 1
  }
} finally {
  remote.cleanup()
  await github.close()
  await cluster.stop()
}
