// The watch image as the Dockerfile describes it, read by the image-layout test and by the
// bench, which starts our watch process with the image's node flags.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from './cluster.ts'

export const DOCKERFILE = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')

/** The ENTRYPOINT's words: `["node", <flags>…, <script>]`; anything else is an error. */
export function imageEntrypoint(dockerfile: string = DOCKERFILE): readonly string[] {
  const entrypoint = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1]
  const words = entrypoint === undefined ? [] : (JSON.parse(entrypoint) as string[])
  if (words[0] !== 'node') throw new Error(`the Dockerfile's ENTRYPOINT is not ["node", …]: ${entrypoint ?? 'none'}`)
  return words
}
