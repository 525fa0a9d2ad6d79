// Text that came from outside (a repository's YAML and paths, the apiserver, helm-controller's
// messages, an exec plugin) made safe to print. The Actions runner reads a step's stdout line by
// line (split on \n, \r and \r\n) and runs `::command::` at the start of a line and the legacy
// `##[command]` anywhere in one; terminals obey control characters; bidi controls reorder what a
// reviewer sees. Every line our entries print passes through logLine; values put into a line pass
// through oneLine first so a message never splits a line or a table row.

/** Longest untrusted value put into a line: longer text is cut with a note of how much was left out. */
export const MAX_TEXT = 4000
/** Longest line printed, a last resort behind MAX_TEXT (a line may hold several values). */
export const MAX_LINE = 16_000
/** Most of a repository's content a problem message quotes: enough to recognise, too little to carry a file out. */
export const MAX_QUOTE = 100

/** Line breaks the runner or a viewer may honour: CRLF, LF, CR, NEL, LS, PS. */
const LINE_BREAK = /\r\n|[\n\r\u0085\u2028\u2029]/g
/** C0 and C1 controls except tab, DEL, and the bidi embedding/override/isolate marks. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const INVISIBLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
/** A `::` the runner's V2 parser would take: at the start, after whitespace or invisible format characters. */
const LEADING_COMMAND = /^([\s\p{Cf}]*):(?=:)/u
/** The legacy form, honoured anywhere in a line. */
const LEGACY_COMMAND = /##\[/g
const ZERO_WIDTH_SPACE = '\u200b'
/** Half of a surrogate pair without its other half. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** A control or bidi character as its visible escape (`\u202e`), which also keeps JSON text valid. */
function visible(ch: string): string {
  return `\\u${(ch.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`
}

/** Cuts text to `max` characters (never inside a surrogate pair), saying how many were left out. */
export function capped(text: string, max: number = MAX_TEXT): string {
  if (text.length <= max) return text
  let end = max
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, end)}… (${text.length - end} more characters)`
}

/** Untrusted text for inside one line: line breaks shown as ⏎, controls and bidi marks escaped, capped. */
export function oneLine(text: string, max: number = MAX_TEXT): string {
  return capped(text, max).replace(LONE_SURROGATE, '\ufffd').replace(LINE_BREAK, '⏎').replace(INVISIBLE, visible)
}

/** Repository content quoted in a message: in quotes, one line, at most MAX_QUOTE characters of it. */
export function quoted(text: string, max: number = MAX_QUOTE): string {
  if (text.length <= max) return `'${oneLine(text)}'`
  let end = max
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `'${oneLine(text.slice(0, end))}…' (${text.length} characters)`
}

/**
 * Text with each secret (what the log masks) written as ***, for text that leaves the job where
 * no mask applies: a result file another job prints. Longer secrets first, so none is half-hidden.
 */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  return [...new Set(secrets)]
    .filter((s) => s !== '')
    .sort((a, b) => b.length - a.length)
    .reduce((t, secret) => t.split(secret).join('***'), text)
}

/** Untrusted text that may keep its line breaks (an annotation message, which the toolkit escapes). */
export function plainText(text: string, max: number = MAX_TEXT): string {
  return capped(text, max)
    .replace(LONE_SURROGATE, '\ufffd')
    .replace(/\r\n?|[\u0085\u2028\u2029]/g, '\n')
    .replace(INVISIBLE, visible)
}

/**
 * One finished line as printed to stdout or stderr: no line break left, no workflow command
 * (a leading `::` gets a zero-width space between its colons, `##[` one before its bracket).
 */
export function logLine(line: string, max: number = MAX_LINE): string {
  return oneLine(line, max).replace(LEADING_COMMAND, `$1:${ZERO_WIDTH_SPACE}`).replace(LEGACY_COMMAND, `##${ZERO_WIDTH_SPACE}[`)
}

/** Text of several lines (our own \n separates them), each made a safe line; the trailing \n is kept. */
export function logText(text: string, max: number = MAX_LINE): string {
  const end = text.endsWith('\n') ? '\n' : ''
  return (end === '' ? text : text.slice(0, -1))
    .split('\n')
    .map((l) => logLine(l, max))
    .join('\n')
    .concat(end)
}

/**
 * JSON for stdout: valid, lossless, and no line of it a workflow command (`[` after `##` and
 * bidi marks written as \u escapes, which JSON decodes back to the same value).
 */
export function jsonText(value: unknown, indent?: number): string {
  return safeJson(JSON.stringify(value, null, indent))
}

/** JSON text written so no line of it is a workflow command and no bidi mark reorders it; it decodes to the same value. */
export function safeJson(json: string): string {
  return json.replace(/##\[/g, '##\\u005b').replace(/[\u0085\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, visible)
}
