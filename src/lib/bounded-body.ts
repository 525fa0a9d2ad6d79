// A response body read whole, but never past a size: what a remote server sends (a chart index,
// an archive, a registry manifest) is not trusted to be small.

/** The body's bytes; throws past `limit` (by Content-Length at once, else while reading). */
export async function boundedBody(response: Response, limit: number): Promise<Uint8Array> {
  const length = Number(response.headers.get('content-length') ?? '0')
  if (length > limit) throw new Error(`it is larger than ${limit / 1024 / 1024} MiB`)
  const reader = response.body?.getReader()
  if (reader === undefined) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > limit) {
      await reader.cancel()
      throw new Error(`it is larger than ${limit / 1024 / 1024} MiB`)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}
