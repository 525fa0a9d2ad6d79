// One paginated LIST loop for every adapter: pages of `limit` items, followed by their
// continue token until the last page. (The reflectors' list in list-watch.ts also starts over
// on an expired token, so it keeps its own loop.)

export interface Page<T> {
  readonly items: readonly T[]
  /** The continue token of the next page; undefined or empty on the last one. */
  readonly next: string | undefined
}

/** Every item of a LIST, page by page, in the server's order. */
export async function paginate<T>(page: (next: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = []
  let next: string | undefined
  do {
    const got = await page(next)
    items.push(...got.items)
    next = got.next === '' ? undefined : got.next
  } while (next !== undefined)
  return items
}
