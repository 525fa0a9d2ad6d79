// The corpus chart migrator: hooks (pre-upgrade and others) and a crds/ directory.

import { tree, type CorpusChart } from './corpus.ts'

const WIDGET_CRD = (plural: string, kind: string): string => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.example.com
spec:
  group: example.com
  names:
    kind: ${kind}
    listKind: ${kind}List
    plural: ${plural}
    singular: ${kind.toLowerCase()}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`

export const migrator: CorpusChart = {
  name: 'migrator',
  files: tree({
    'Chart.yaml': 'apiVersion: v2\nname: migrator\nversion: 0.4.0\nappVersion: "7.1"\n',
    'values.yaml': 'image: ghcr.io/acme/migrate:7.1\nwidgets: [alpha, beta]\nbackoffLimit: 2\n',
    'crds/widgets.yaml': WIDGET_CRD('widgets', 'Widget'),
    'crds/gadgets.yaml': `${WIDGET_CRD('gadgets', 'Gadget')}---\n${WIDGET_CRD('gizmos', 'Gizmo')}`,
    'templates/serviceaccount.yaml': `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}-migrate
`,
    'templates/job-migrate.yaml': `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    "helm.sh/hook": pre-upgrade
    "helm.sh/hook-weight": "-5"
    "helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded
spec:
  backoffLimit: {{ .Values.backoffLimit }}
  template:
    spec:
      restartPolicy: Never
      serviceAccountName: {{ .Release.Name }}-migrate
      containers:
        - name: migrate
          image: {{ .Values.image }}
          args: ["migrate", "--from-revision={{ .Release.Revision }}"{{ if .Release.IsUpgrade }}, "--upgrade"{{ end }}]
`,
    'templates/hooks-post.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-installed
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-weight: "10"
data:
  upgrade: {{ .Release.IsUpgrade | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-pre-install
  annotations:
    helm.sh/hook: pre-install
stringData:
  token: not-a-secret
`,
    'templates/tests/test-connection.yaml': `apiVersion: v1
kind: Pod
metadata:
  name: "{{ .Release.Name }}-test"
  annotations:
    "helm.sh/hook": test
spec:
  restartPolicy: Never
  containers:
    - name: check
      image: busybox:1.36
      command: ["true"]
`,
    'templates/widgets.yaml': `{{- range .Values.widgets }}
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ $.Release.Name }}-{{ . }}
spec:
  installed: {{ $.Release.IsInstall }}
{{- end }}
`,
    'templates/release.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-release
data:
  isInstall: {{ .Release.IsInstall | quote }}
  isUpgrade: {{ .Release.IsUpgrade | quote }}
  revision: {{ .Release.Revision | quote }}
  service: {{ .Release.Service }}
  template: {{ .Template.Name }}
`,
  }),
  releases: [{ name: 'install' }, { name: 'upgrade', isUpgrade: true, values: { image: 'ghcr.io/acme/migrate:7.2', widgets: ['gamma'], backoffLimit: 0 } }],
}
