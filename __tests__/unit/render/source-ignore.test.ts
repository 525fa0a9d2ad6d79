// What source-controller leaves out of a GitRepository's artifact: its defaults, .sourceignore
// files scoped to their directory, then spec.ignore, gitignore-style (the last match decides).

import { describe, expect, it } from 'vitest'
import { artifactFilter } from '../../../src/render/source-ignore.ts'

const kept = (keep: (path: string) => boolean, paths: readonly string[]): string[] => paths.filter(keep)

describe('artifactFilter', () => {
  it('leaves out the defaults: VCS and CI files, images and archives, .sops.yaml at any depth', () => {
    const keep = artifactFilter(new Map(), undefined)
    expect(
      kept(keep, [
        'apps/a/release.yaml',
        '.gitignore',
        '.github/workflows/ci.yaml',
        'apps/.github/x.yaml',
        'docs/logo.png',
        'charts/a.tar.gz',
        'apps/a/.sops.yaml',
        '.gitlab-ci.yml',
        'apps/a/.gitlab-ci.yml',
        'clusters/.github',
      ]),
    ).toEqual(['apps/a/release.yaml', 'clusters/.github'])
  })

  it('scopes a nested .sourceignore to its directory; anchored patterns, globs, ** and negation as gitignore', () => {
    const files = new Map([
      ['.sourceignore', '# drafts\n*.draft.yaml\n/docs/\n!keep.draft.yaml\n'],
      ['apps/b/.sourceignore', 'tests/\n**/fixtures/*.yaml\n'],
    ])
    const keep = artifactFilter(files, 'clusters/staging/\n')
    expect(
      kept(keep, [
        'apps/a/wip.draft.yaml',
        'apps/a/keep.draft.yaml',
        'docs/readme.yaml',
        'apps/docs/x.yaml',
        'apps/b/tests/t.yaml',
        'apps/a/tests/t.yaml',
        'apps/b/deep/fixtures/f.yaml',
        'clusters/staging/apps.yaml',
        'clusters/production/apps.yaml',
      ]),
    ).toEqual(['apps/a/keep.draft.yaml', 'apps/docs/x.yaml', 'apps/a/tests/t.yaml', 'clusters/production/apps.yaml'])
  })
})
