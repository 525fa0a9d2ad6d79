// The corpus chart capable: Capabilities (API versions, Kubernetes version) and Chart.yaml kubeVersion.

import { tree, type CorpusChart } from './corpus.ts'

export const capable: CorpusChart = {
  name: 'capable',
  files: tree({
    'Chart.yaml': 'apiVersion: v2\nname: capable\nversion: 2.0.0\nkubeVersion: ">=1.25.0-0"\n',
    'values.yaml': 'metrics:\n  enabled: true\n',
    'templates/servicemonitor.yaml': `{{- if and .Values.metrics.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels:
      app: {{ .Release.Name }}
  endpoints:
    - port: metrics
      {{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}
      honorLabels: true
      {{- end }}
{{- end }}
`,
    'templates/pdb.yaml': `apiVersion: {{ if .Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudget" }}policy/v1{{ else }}policy/v1beta1{{ end }}
kind: PodDisruptionBudget
metadata:
  name: {{ .Release.Name }}
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: {{ .Release.Name }}
`,
    'templates/hpa.yaml': `apiVersion: {{ if semverCompare ">=1.23-0" .Capabilities.KubeVersion.GitVersion }}autoscaling/v2{{ else }}autoscaling/v2beta2{{ end }}
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .Release.Name }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .Release.Name }}
  minReplicas: 1
  maxReplicas: {{ if semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version }}10{{ else }}5{{ end }}
`,
    'templates/capabilities.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-capabilities
data:
  version: {{ .Capabilities.KubeVersion.Version | quote }}
  major: {{ .Capabilities.KubeVersion.Major | quote }}
  minor: {{ .Capabilities.KubeVersion.Minor | quote }}
  string: {{ .Capabilities.KubeVersion | toString | quote }}
  apiVersions: {{ .Capabilities.APIVersions | toJson | quote }}
`,
  }),
  releases: [
    // Helm's defaults: the Kubernetes version of the client-go it is built with, the API versions of its scheme.
    { name: "Helm's default capabilities" },
    {
      name: 'v1.31 with the Prometheus operator',
      kubeVersion: 'v1.31.2',
      apiVersions: ['monitoring.coreos.com/v1', 'monitoring.coreos.com/v1/ServiceMonitor'],
    },
    { name: 'a vendor version', kubeVersion: '1.29.4-gke.1043002', apiVersions: ['monitoring.coreos.com/v1'], values: { metrics: { enabled: true } } },
    { name: 'too old for the chart', kubeVersion: 'v1.24.9' },
  ],
}
