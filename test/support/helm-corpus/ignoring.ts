// The corpus chart ignoring: what Helm's directory loader leaves out (.helmignore, hidden templates, a BOM).

import { tree, type CorpusChart } from './corpus.ts'

export const ignoring: CorpusChart = {
  name: 'ignoring',
  files: tree({
    'Chart.yaml': 'apiVersion: v2\nname: ignoring\nversion: 0.1.0\n',
    '.helmignore': '# Patterns to ignore when building packages.\n*.bak\nsecret/\ndocs/*.md\n',
    // Helm's loaders drop a UTF-8 byte order mark at the start of a file (here and in marked.yaml).
    'values.yaml': '\uFEFFname: ignoring\n',
    'config/settings.yaml': 'kept: true\n',
    'config/settings.yaml.bak': 'kept: false\n',
    'secret/token.txt': 'not for the chart\n',
    'docs/README.md': '# ignored\n',
    'docs/guide.txt': 'kept\n',
    'templates/files.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Values.name }}
data:
  files: "{{ range $path, $_ := .Files.Glob "**" }}{{ $path }} {{ end }}"
`,
    'templates/marked.yaml': '\uFEFFapiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-marked\n',
    // A hidden file under templates/ is never a template (Helm's default ignore rule).
    'templates/.draft.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: draft\n',
  }),
  releases: [{ name: 'defaults' }],
}
