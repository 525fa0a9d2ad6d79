// A WebAssembly module's own memory given a maximum. Go's wasip1 output defines its memory with
// no maximum, so the runtime may grow it until the process dies; with one, a build that needs
// more fails inside the module (Go reports "out of memory" and exits), and the host drops that
// instance and goes on. Pure: the module's bytes in, new bytes out.

const MEMORY_SECTION = 5
const PAGE = 64 * 1024

/** `module` with every memory it defines limited to `maxBytes` (rounded down to whole pages). */
export function withMemoryMaximum(module: Uint8Array, maxBytes: number): Uint8Array {
  const maxPages = Math.floor(maxBytes / PAGE)
  if (module.length < 8 || module[0] !== 0x00 || module[1] !== 0x61 || module[2] !== 0x73 || module[3] !== 0x6d) throw new Error('not a WebAssembly module')
  let at = 8
  while (at < module.length) {
    const id = module[at] ?? 0
    const size = readUnsigned(module, at + 1)
    const contentStart = at + 1 + size.length
    const contentEnd = contentStart + size.value
    if (id === MEMORY_SECTION) {
      const content = limitedMemories(module.subarray(contentStart, contentEnd), maxPages)
      const header = [MEMORY_SECTION, ...unsigned(content.length)]
      const out = new Uint8Array(at + header.length + content.length + (module.length - contentEnd))
      out.set(module.subarray(0, at), 0)
      out.set(header, at)
      out.set(content, at + header.length)
      out.set(module.subarray(contentEnd), at + header.length + content.length)
      return out
    }
    at = contentEnd
  }
  throw new Error('the module defines no memory')
}

function limitedMemories(section: Uint8Array, maxPages: number): Uint8Array {
  const count = readUnsigned(section, 0)
  let at = count.length
  const out: number[] = [...unsigned(count.value)]
  for (let i = 0; i < count.value; i++) {
    const flags = section[at] ?? 0
    if (flags !== 0x00 && flags !== 0x01) throw new Error(`memory limits of kind ${flags} (shared or 64-bit) are not supported`)
    const min = readUnsigned(section, at + 1)
    at += 1 + min.length
    let max = maxPages
    if (flags === 0x01) {
      const declared = readUnsigned(section, at)
      at += declared.length
      max = Math.min(max, declared.value)
    }
    if (min.value > max) throw new Error(`the module needs ${min.value * PAGE} bytes of memory to start, more than the ${maxPages * PAGE} allowed`)
    out.push(0x01, ...unsigned(min.value), ...unsigned(max))
  }
  return Uint8Array.from(out)
}

/** An unsigned LEB128 number at `at`: its value and how many bytes it takes. */
function readUnsigned(bytes: Uint8Array, at: number): { value: number; length: number } {
  let value = 0
  let shift = 0
  for (let i = at; i < bytes.length && i < at + 5; i++) {
    const byte = bytes[i] ?? 0
    value += (byte & 0x7f) * 2 ** shift
    shift += 7
    if ((byte & 0x80) === 0) return { value, length: i - at + 1 }
  }
  throw new Error('malformed WebAssembly module: a length runs past its end')
}

function unsigned(value: number): number[] {
  const out: number[] = []
  let rest = value
  do {
    let byte = rest % 128
    rest = Math.floor(rest / 128)
    if (rest > 0) byte |= 0x80
    out.push(byte)
  } while (rest > 0)
  return out
}
