// The corpus chart guarded: values.schema.json.

import { tree, type CorpusChart } from './corpus.ts'

export const guarded: CorpusChart = {
  name: 'guarded',
  files: tree({
    'Chart.yaml': 'apiVersion: v2\nname: guarded\nversion: 0.1.0\n',
    'values.yaml': 'replicas: 1\nmode: blue\nimage:\n  repository: nginx\n  tag: "1.27"\n',
    'values.schema.json': JSON.stringify(
      {
        $schema: 'https://json-schema.org/draft-07/schema#',
        type: 'object',
        required: ['replicas', 'image'],
        properties: {
          replicas: { type: 'integer', minimum: 1 },
          mode: { type: 'string', enum: ['blue', 'green'] },
          image: { type: 'object', required: ['repository'], properties: { repository: { type: 'string' }, tag: { type: 'string' } } },
        },
      },
      null,
      2,
    ),
    'templates/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Values.mode }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: {{ printf "%s:%s" .Values.image.repository .Values.image.tag }}
`,
  }),
  releases: [
    { name: 'valid', values: { replicas: 4, mode: 'green' } },
    { name: 'a string for an integer', values: { replicas: 'four' } },
    { name: 'outside the enum, zero replicas', values: { replicas: 0, mode: 'red' } },
  ],
}
