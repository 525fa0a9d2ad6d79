// A chart with more than a ConfigMap, for the drift tests: the demo ConfigMap, a Secret
// from a value, a Deployment scaled by an HPA, and a Service. Nothing needs nodes: helm
// installs without waiting and the apiserver stores the objects as they are.

import { DEMO_CONFIGMAP_TEMPLATE, type ChartSpec } from './chart.ts'

const SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-credentials
type: Opaque
stringData:
  # Not from the values: the demo ConfigMap renders every value in clear.
  password: {{ printf "%s-s3cret-pw" .Release.Name | quote }}
`

const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    app: {{ .Release.Name }}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}
    spec:
      containers:
        - name: app
          image: {{ .Values.image | default "nginx:1.27" | quote }}
          args: ["--greeting", {{ .Values.greeting | default "hello" | quote }}]
          resources:
            limits:
              cpu: 1000m
              memory: 1024Mi
`

const HPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .Release.Name }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .Release.Name }}
  minReplicas: 1
  maxReplicas: 5
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 80
`

const SERVICE = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    app: {{ .Release.Name }}
  ports:
    - name: http
      port: 80
      targetPort: 8080
`

/** The objects `driftChart` renders for a release, as Kind/name. */
export function driftChartObjects(release: string): string[] {
  return [`ConfigMap/${release}`, `Secret/${release}-credentials`, `Deployment/${release}`, `HorizontalPodAutoscaler/${release}`, `Service/${release}`]
}

export function driftChart(name: string, version = '0.1.0'): ChartSpec {
  return {
    name,
    version,
    templates: { 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE, 'secret.yaml': SECRET, 'deployment.yaml': DEPLOYMENT, 'hpa.yaml': HPA, 'service.yaml': SERVICE },
  }
}

/** A chart of `count` small ConfigMaps: a large release, to time drift against. */
export function manyConfigMapsChart(name: string, count: number, version = '0.1.0'): ChartSpec {
  const template = `{{- range $i := until ${count} }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-{{ $i }}
data:
  index: {{ $i | quote }}
  greeting: {{ $.Values.greeting | default "hello" | quote }}
{{- end }}
`
  return { name, version, templates: { 'configmaps.yaml': template } }
}
