// The corpus chart bundled: .Files (Get, GetBytes, Glob, Lines, AsConfig, AsSecrets).

import { tree, type CorpusChart } from './corpus.ts'

export const bundled: CorpusChart = {
  name: 'bundled',
  files: tree({
    'Chart.yaml': 'apiVersion: v2\nname: bundled\nversion: 0.5.0\n',
    'values.yaml': 'extraFile: config/extra.yaml\n',
    'config/app.properties': 'server.port=8080\nserver.name=bundled\n',
    'config/logging.yaml': 'level: info\nformat: json\n',
    'config/extra.yaml': 'extra: true\n',
    'files/banner.txt': 'line one\nline two\n\nline four\n',
    'files/logo.bin': new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0x10, 0x80]),
    'templates/configmap.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-files
data:
  app.properties: |-
    {{- .Files.Get "config/app.properties" | nindent 4 }}
  extra: {{ .Files.Get .Values.extraFile | quote }}
  missing: {{ .Files.Get "config/absent.txt" | quote }}
  banner: {{ range $i, $line := .Files.Lines "files/banner.txt" }}{{ $i }}={{ $line }};{{ end }}
  files: "{{ range $path, $_ := .Files.Glob "**" }}{{ $path }} {{ end }}"
  {{- (.Files.Glob "config/*.yaml").AsConfig | nindent 2 }}
`,
    'templates/secret.yaml': `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-files
data:
  logo: {{ .Files.Get "files/logo.bin" | b64enc }}
  logoSize: {{ .Files.GetBytes "files/logo.bin" | len | toString | b64enc }}
  {{- (.Files.Glob "files/*.txt").AsSecrets | nindent 2 }}
`,
  }),
  releases: [{ name: 'defaults' }, { name: 'another file', values: { extraFile: 'config/logging.yaml' } }],
}
