// The corpus chart webapp: what `helm create` makes, grown a little.

import { tree, type CorpusChart } from './corpus.ts'

const WEBAPP_HELPERS = `{{/* Expand the name of the chart. */}}
{{- define "webapp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "webapp.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "webapp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "webapp.labels" -}}
helm.sh/chart: {{ include "webapp.chart" . }}
{{ include "webapp.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "webapp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "webapp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "webapp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "webapp.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}
`

const WEBAPP_DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "webapp.fullname" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
spec:
  {{- if not .Values.autoscaling.enabled }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "webapp.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "webapp.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      serviceAccountName: {{ include "webapp.serviceAccountName" . }}
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ .Values.service.port }}
              protocol: TCP
          env:
            - name: RELEASE
              value: {{ .Release.Name | quote }}
            {{- range $name, $value := .Values.env }}
            - name: {{ $name }}
              value: {{ $value | quote }}
            {{- end }}
          envFrom:
            - configMapRef:
                name: {{ include "webapp.fullname" . }}
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
`

const WEBAPP_SERVICE = `apiVersion: v1
kind: Service
metadata:
  name: {{ include "webapp.fullname" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - port: {{ .Values.service.port }}
      targetPort: http
      protocol: TCP
      name: http
  selector:
    {{- include "webapp.selectorLabels" . | nindent 4 }}
`

const WEBAPP_SERVICE_ACCOUNT = `{{- if .Values.serviceAccount.create -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "webapp.serviceAccountName" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: {{ .Values.serviceAccount.automount }}
{{- end }}
`

const WEBAPP_INGRESS = `{{- if .Values.ingress.enabled -}}
{{- $fullName := include "webapp.fullname" . -}}
{{- $svcPort := .Values.service.port -}}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
  {{- with .Values.ingress.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with .Values.ingress.className }}
  ingressClassName: {{ . }}
  {{- end }}
  {{- if .Values.ingress.tls }}
  tls:
    {{- range .Values.ingress.tls }}
    - hosts:
        {{- range .hosts }}
        - {{ . | quote }}
        {{- end }}
      secretName: {{ .secretName }}
    {{- end }}
  {{- end }}
  rules:
    {{- range .Values.ingress.hosts }}
    - host: {{ .host | quote }}
      http:
        paths:
          {{- range .paths }}
          - path: {{ .path }}
            pathType: {{ .pathType }}
            backend:
              service:
                name: {{ $fullName }}
                port:
                  number: {{ $svcPort }}
          {{- end }}
    {{- end }}
{{- end }}
`

const WEBAPP_CONFIGMAP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "webapp.fullname" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
data:
  GREETING: {{ tpl .Values.greeting . | quote }}
  {{- range $key, $value := .Values.config }}
  {{ $key | upper }}: {{ if kindIs "slice" $value }}{{ join "," $value | quote }}{{ else }}{{ $value | toString | quote }}{{ end }}
  {{- end }}
  settings.json: {{ .Values.config | toJson | quote }}
  settings.yaml: |
    {{- toYaml .Values.config | nindent 4 }}
`

const WEBAPP_NOTES = `1. Get the application URL by running these commands:
{{- if .Values.ingress.enabled }}
{{- range $host := .Values.ingress.hosts }}
  {{- range .paths }}
  http{{ if $.Values.ingress.tls }}s{{ end }}://{{ $host.host }}{{ .path }}
  {{- end }}
{{- end }}
{{- else if contains "NodePort" .Values.service.type }}
  export NODE_PORT=$(kubectl get --namespace {{ .Release.Namespace }} -o jsonpath="{.spec.ports[0].nodePort}" services {{ include "webapp.fullname" . }})
{{- else }}
  kubectl --namespace {{ .Release.Namespace }} port-forward svc/{{ include "webapp.fullname" . }} 8080:{{ .Values.service.port }}
{{- end }}
`

export const webapp: CorpusChart = {
  name: 'webapp',
  files: tree({
    'Chart.yaml': 'apiVersion: v2\nname: webapp\ndescription: A web application\ntype: application\nversion: 1.2.3\nappVersion: "2.0.1"\n',
    'values.yaml': `replicaCount: 1
image:
  repository: ghcr.io/acme/webapp
  pullPolicy: IfNotPresent
  tag: ""
imagePullSecrets: []
nameOverride: ""
fullnameOverride: ""
greeting: "hello from {{ .Release.Name }}"
serviceAccount:
  create: true
  automount: true
  annotations: {}
  name: ""
podAnnotations: {}
podLabels: {}
service:
  type: ClusterIP
  port: 80
ingress:
  enabled: false
  className: ""
  annotations: {}
  hosts:
    - host: chart-example.local
      paths:
        - path: /
          pathType: ImplementationSpecific
  tls: []
autoscaling:
  enabled: false
resources: {}
env: {}
config:
  logLevel: info
  features: [search, export]
  timeoutSeconds: 30
nodeSelector: {}
tolerations: []
`,
    'templates/_helpers.tpl': WEBAPP_HELPERS,
    'templates/deployment.yaml': WEBAPP_DEPLOYMENT,
    'templates/service.yaml': WEBAPP_SERVICE,
    'templates/serviceaccount.yaml': WEBAPP_SERVICE_ACCOUNT,
    'templates/ingress.yaml': WEBAPP_INGRESS,
    'templates/configmap.yaml': WEBAPP_CONFIGMAP,
    'templates/NOTES.txt': WEBAPP_NOTES,
  }),
  releases: [
    { name: 'defaults' },
    {
      name: 'production',
      values: {
        replicaCount: 3,
        image: { tag: '2.1.0', pullPolicy: 'Always' },
        fullnameOverride: 'web-prod',
        serviceAccount: { create: false, name: 'shared' },
        service: { type: 'NodePort', port: 8080 },
        ingress: {
          enabled: true,
          className: 'nginx',
          annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '8m' },
          hosts: [
            { host: 'web.example.com', paths: [{ path: '/', pathType: 'Prefix' }] },
            {
              host: 'api.example.com',
              paths: [
                { path: '/v1', pathType: 'Prefix' },
                { path: '/v2', pathType: 'Exact' },
              ],
            },
          ],
          tls: [{ secretName: 'web-tls', hosts: ['web.example.com', 'api.example.com'] }],
        },
        resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: 0.1, memory: '128Mi' } },
        env: { LOG_FORMAT: 'json', FEATURE_X: true, RATIO: 0.75 },
        config: { logLevel: 'debug', features: ['search'], timeoutSeconds: 60, tracing: null },
        podAnnotations: { 'prometheus.io/scrape': 'true' },
        podLabels: { tier: 'frontend' },
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'web', effect: 'NoSchedule' }],
        imagePullSecrets: [{ name: 'registry' }],
      },
    },
    { name: 'integers from --set', set: { replicaCount: '5', 'service.port': '8443', 'image.tag': '"2.10"' } },
    { name: 'upgrade, NodePort', isUpgrade: true, values: { service: { type: 'NodePort' }, greeting: '{{ .Release.Namespace }}/{{ .Chart.Version }}' } },
  ],
}
