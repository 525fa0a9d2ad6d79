// One commit of a range as the renderer reads it: its files (listed at once, read lazily), the
// Flux objects written in them, and the trees each Flux source holds at that commit (the
// repository filtered as source-controller filters it, or an ExternalArtifact laid out by its
// copy rules). Nothing is written anywhere: builds get the files of their closure in memory.

import { posix } from 'node:path'
import type { RenderProblem } from '../core/rendered.ts'
import { KUSTOMIZATION_FILES } from './closure.ts'
import type { FluxKustomization } from './flux-objects.ts'
import { TreeFiles } from './provenance.ts'
import type { Identity, TreeReader } from './render-context.ts'
import { scanFluxObjects, type FluxScan, type Written } from './scan.ts'
import { filteredView, type Snapshot } from './snapshot.ts'
import { artifactFilter, SOURCE_IGNORE_FILE } from './source-ignore.ts'
import { artifactTree, type SourceTree } from './source-tree.ts'

export const YAML_GLOBS = ['*.yaml', '*.yml']

export class Commit {
  private readonly artifacts = new Map<string, { tree: SourceTree; problems: readonly string[] }>()
  private readonly treeFiles = new WeakMap<SourceTree, TreeFiles>()
  private readonly gitTrees = new Map<string, SourceTree>()
  readonly snapshot: Snapshot
  readonly scan: FluxScan
  /** The `.sourceignore` files, path → text. */
  private readonly ignoreFiles: ReadonlyMap<string, string>
  private readonly reader: TreeReader

  private constructor(reader: TreeReader, snapshot: Snapshot, scan: FluxScan, ignoreFiles: ReadonlyMap<string, string>) {
    this.reader = reader
    this.snapshot = snapshot
    this.scan = scan
    this.ignoreFiles = ignoreFiles
  }

  /** Kustomization and `.sourceignore` files: every closure and artifact reads them. */
  private static async structure(snapshot: Snapshot): Promise<Map<string, string>> {
    const ignores = snapshot.paths.filter((p) => posix.basename(p) === SOURCE_IGNORE_FILE)
    await snapshot.prefetch([...snapshot.paths.filter(isKustomizationFile), ...ignores])
    return new Map(await Promise.all(ignores.map(async (p) => [p, (await snapshot.text(p)) ?? ''] as const)))
  }

  /** Head: `marked` (git grep) are the files that can hold Flux objects; only those and kustomization files are read. */
  static async open(reader: TreeReader, snapshot: Snapshot, marked: readonly string[]): Promise<Commit> {
    const [scan, ignoreFiles] = await Promise.all([scanFluxObjects(snapshot, marked), Commit.structure(snapshot)])
    return new Commit(reader, snapshot, scan, ignoreFiles)
  }

  /** Base: head's Flux scan for every file the range left alone; the files it changed are scanned again. */
  static async derive(head: Commit, snapshot: Snapshot): Promise<Commit> {
    const touched = new Set(changedPaths(snapshot, head.snapshot))
    const [rescanned, ignoreFiles] = await Promise.all([
      scanFluxObjects(
        snapshot,
        snapshot.paths.filter((p) => touched.has(p)),
      ),
      Commit.structure(snapshot),
    ])
    const kept = <T>(list: readonly Written<T>[], fresh: readonly Written<T>[]): Written<T>[] => [...list.filter((w) => !touched.has(w.file)), ...fresh]
    const scan: FluxScan = {
      kustomizations: kept(head.scan.kustomizations, rescanned.kustomizations),
      gitRepositories: kept(head.scan.gitRepositories, rescanned.gitRepositories),
      generators: kept(head.scan.generators, rescanned.generators),
    }
    return new Commit(head.reader, snapshot, scan, ignoreFiles)
  }

  /** The tree a Kustomization's source holds at this commit. */
  source(k: FluxKustomization, identity: Identity): SourceTree | undefined {
    const id = `${k.sourceRef.namespace}/${k.sourceRef.name}`
    if (k.sourceRef.kind === 'GitRepository') return this.gitRepositoryTree(id)
    return this.artifact(id, identity)?.tree
  }

  /** Copy rules of the ExternalArtifact `k` reads that Flux would refuse, one sentence each. */
  artifactProblems(k: FluxKustomization, identity: Identity): readonly string[] {
    if (k.sourceRef.kind !== 'ExternalArtifact') return []
    return this.artifact(`${k.sourceRef.namespace}/${k.sourceRef.name}`, identity)?.problems ?? []
  }

  private artifact(id: string, identity: Identity): { tree: SourceTree; problems: readonly string[] } | undefined {
    const entry = identity.artifacts.get(id)
    if (entry === undefined) return undefined
    let found = this.artifacts.get(id)
    if (found === undefined) {
      found = artifactTree(this.gitRepositoryTree(entry.source).view, entry.artifact, entry.alias)
      this.artifacts.set(id, found)
    }
    return found
  }

  /** The repository as the GitRepository `id`'s artifact holds it: without what source-controller ignores. */
  gitRepositoryTree(id: string): SourceTree {
    let tree = this.gitTrees.get(id)
    if (tree === undefined) {
      const filter = artifactFilter(this.ignoreFiles, this.scan.gitRepositories.find((g) => g.value.id === id)?.value.ignore)
      // Asked for the same paths again and again (every decision checks the changed and Flux files).
      const known = new Map<string, boolean>()
      const keep = (path: string): boolean => {
        let kept = known.get(path)
        if (kept === undefined) {
          kept = filter(path)
          known.set(path, kept)
        }
        return kept
      }
      tree = { view: filteredView(this.snapshot, keep), toRepository: (path) => path, fromRepository: (path) => (keep(path) ? [path] : []) }
      this.gitTrees.set(id, tree)
    }
    return tree
  }

  /** How source-controller filters this commit for each GitRepository: a change here changes every artifact. */
  ignoreRules(): string {
    return JSON.stringify([[...this.ignoreFiles].sort(), this.scan.gitRepositories.map((g) => [g.value.id, g.value.ignore ?? null]).sort()])
  }

  /** Each tree's files read and indexed once for provenance. */
  filesOf(tree: SourceTree): TreeFiles {
    let files = this.treeFiles.get(tree)
    if (files === undefined) {
      files = new TreeFiles(tree.view)
      this.treeFiles.set(tree, files)
    }
    return files
  }

  /** YAML files at this commit holding `text` as written (a fixed string, never a pattern). */
  grep(text: string): Promise<string[]> {
    return this.reader.grep(this.snapshot.sha, text, YAML_GLOBS, { fixed: true })
  }
}

/** Paths the two commits hold differently (added, deleted or changed). */
export function changedPaths(a: Snapshot, b: Snapshot): string[] {
  const out = new Set<string>()
  for (const path of a.paths) if (a.object(path) !== b.object(path)) out.add(path)
  for (const path of b.paths) if (!a.isFile(path)) out.add(path)
  return [...out]
}

export function isKustomizationFile(path: string): boolean {
  return (KUSTOMIZATION_FILES as readonly string[]).includes(posix.basename(path))
}

/** A problem of the Flux Kustomization `k`, at its path. */
export function problemOf(k: FluxKustomization, message: string, where?: { file: string; line: number }): RenderProblem {
  // Without a line of its own, a problem points at the Flux Kustomization's document: a file, never a directory.
  return { kustomization: k.id, path: k.path === '' ? './' : `./${k.path}`, message, ...(where ?? k.definedAt ?? {}) }
}
