// The corpus chart functions: the template functions most charts lean on (Sprig, Helm's own),
// where a WebAssembly build could part from a native one: hashes, encodings, regular expressions,
// YAML/JSON/TOML round trips, semver, lookup (empty without a cluster) and DNS (off in Helm).

import { tree, type CorpusChart } from './corpus.ts'

const TEMPLATE = `{{- $existing := lookup "v1" "Secret" .Release.Namespace "functions-token" }}
{{- $settings := .Values.settings | toYaml | fromYaml }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-functions
  annotations:
    checksum/values: {{ .Values | toJson | sha256sum }}
data:
  lookup: {{ if $existing }}found{{ else }}none{{ end }}
  lookupAll: {{ lookup "v1" "ConfigMap" "" "" | toJson | quote }}
  dns: {{ getHostByName "localhost" | quote }}
  sha1: {{ .Values.text | sha1sum }}
  adler32: {{ .Values.text | adler32sum | quote }}
  base64: {{ .Values.text | b64enc }}
  base32: {{ .Values.text | b32enc }}
  roundTrip: {{ .Values.text | b64enc | b64dec | quote }}
  upper: {{ .Values.text | upper | quote }}
  title: {{ .Values.text | title | quote }}
  snake: {{ "HelmReleaseTrigger" | snakecase | quote }}
  regex: {{ regexReplaceAll \`([a-z]+)-(\\d+)\` .Values.image "\${2}:\${1}" | quote }}
  found: {{ regexFindAll "[0-9]+" .Values.image -1 | toJson | quote }}
  split: {{ splitList "," .Values.csv | sortAlpha | uniq | toJson | quote }}
  dict: {{ dict "b" 2 "a" 1 | toJson | quote }}
  merged: {{ merge (dict "x" 1) .Values.settings | toJson | quote }}
  settings: {{ $settings | toJson | quote }}
  toml: {{ .Values.settings | toToml | quote }}
  semver: {{ semverCompare "~1.2.0" .Values.version | quote }}
  major: {{ (semver .Values.version).Major | quote }}
  math: "{{ add 1 2 | mul 4 }} {{ div 7 2 }} {{ mod 7 2 }} {{ max 3 9 1 }} {{ .Values.count | int64 | add 1 }}"
  floats: "{{ .Values.ratio }} {{ addf .Values.ratio 1.5 }} {{ round 2.567 2 }} {{ .Values.count }} {{ .Values.count | toYaml }}"
  ternary: {{ ternary "yes" "no" .Values.flag | quote }}
  default: {{ .Values.missing | default "fallback" | quote }}
  empty: {{ empty .Values.emptyList | quote }}
  coalesce: {{ coalesce .Values.missing "" "third" | quote }}
  list: {{ list 3 1 2 | sortAlpha | join "-" | quote }}
  indent: |
    {{- .Values.settings | toPrettyJson | nindent 4 }}
  yamlArray: {{ "- a\\n- b" | fromYamlArray | toJson | quote }}
  jsonError: {{ "{not json" | fromJson | toJson | quote }}
  quoteAll: {{ list "a" "b" | join "," | squote }}
  trunc: {{ .Values.text | trunc 4 | quote }}
  contains: {{ contains "ell" .Values.text | quote }}
  kindOf: {{ kindOf .Values.settings }}-{{ kindOf .Values.ratio }}-{{ typeOf .Values.flag }}
  required: {{ required "text is required" .Values.text | quote }}
`

export const functions: CorpusChart = {
  name: 'functions',
  files: tree({
    'Chart.yaml': 'apiVersion: v2\nname: functions\nversion: 0.2.0\n',
    'values.yaml': `text: hello world
image: nginx-127
csv: b,a,c,a
version: 1.2.7
ratio: 0.5
count: 3
flag: true
emptyList: []
settings:
  nested:
    key: value
    number: 42
  list: [1, two, 3.5]
`,
    'templates/configmap.yaml': TEMPLATE,
  }),
  releases: [
    { name: 'defaults' },
    { name: 'other values', values: { text: 'Grüße, 世界', flag: false, version: '2.0.0-rc.1', ratio: 1e-7, settings: { nested: { number: 1e21 } } } },
    { name: 'integers from --set', set: { ratio: '3', count: '7', 'settings.nested.number': '9007199254740993', text: '"0042"' } },
  ],
}
