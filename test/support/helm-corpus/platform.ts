// The corpus chart platform: subcharts (an archive and a directory, one aliased), conditions, tags, globals.

import { packageChart } from '../chart.ts'
import { tree, type CorpusChart } from './corpus.ts'

const CACHE_TEMPLATE = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
data:
  size: {{ .Values.size | quote }}
  env: {{ .Values.global.env | quote }}
  chart: {{ .Chart.Name }}-{{ .Chart.Version }}
`

const cacheArchive = packageChart({
  name: 'cache',
  version: '0.2.0',
  values: { size: '512Mi', exported: { endpoint: 'cache:6379' } },
  templates: { 'configmap.yaml': CACHE_TEMPLATE },
})

export const platform: CorpusChart = {
  name: 'platform',
  files: tree({
    'Chart.yaml': `apiVersion: v2
name: platform
version: 0.9.0
dependencies:
  - name: cache
    version: 0.2.0
    repository: https://charts.example.com
    condition: cache.enabled
    import-values:
      - child: exported
        parent: cacheInfo
  - name: worker
    version: ">=1.0.0"
    repository: file://charts/worker
    condition: worker.enabled
    tags: [backend]
  - name: worker
    alias: reporter
    version: 1.0.0
    repository: file://charts/worker
    condition: reporter.enabled
`,
    'values.yaml': `global:
  env: staging
cache:
  enabled: false
  size: 1Gi
worker:
  enabled: true
  queue: jobs
reporter:
  enabled: false
  queue: reports
cacheInfo:
  endpoint: none
`,
    'charts/cache-0.2.0.tgz': cacheArchive,
    'charts/worker/Chart.yaml': 'apiVersion: v2\nname: worker\nversion: 1.0.0\n',
    'charts/worker/values.yaml': 'replicas: 1\nqueue: default\nglobal:\n  env: dev\n',
    'charts/worker/templates/NOTES.txt': 'The worker {{ .Chart.Name }} reads {{ .Values.queue }}.\n',
    'charts/worker/templates/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  labels:
    app: {{ .Chart.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: {{ .Chart.Name }}
  template:
    metadata:
      labels:
        app: {{ .Chart.Name }}
    spec:
      containers:
        - name: worker
          image: ghcr.io/acme/worker:{{ .Chart.Version }}
          args: [--queue={{ .Values.queue }}, --env={{ .Values.global.env }}]
`,
    'templates/components.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-components
data:
  cache: {{ .Values.cache.enabled | quote }}
  worker: {{ .Values.worker.enabled | quote }}
  cacheEndpoint: {{ .Values.cacheInfo.endpoint | quote }}
  dependencies: {{ range .Chart.Dependencies }}{{ .Name }}@{{ .Version }} {{ end }}
`,
    'templates/NOTES.txt': 'Platform {{ .Chart.Version }} in {{ .Values.global.env }}{{ if .Values.cache.enabled }}, with a cache{{ end }}.\n',
  }),
  releases: [
    { name: 'defaults' },
    {
      name: 'cache on, worker off, reporter aliased',
      values: { cache: { enabled: true, size: '2Gi' }, worker: { enabled: false }, reporter: { enabled: true, replicas: 2 }, global: { env: 'prod' } },
    },
    // A condition that resolves wins over the tags.
    { name: 'tags off', values: { tags: { backend: false } } },
    { name: 'tags off, no condition', values: { tags: { backend: false }, worker: { enabled: null } } },
  ],
}
