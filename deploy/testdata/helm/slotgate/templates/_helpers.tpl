{{- define "slotgate.labels" -}}
app.kubernetes.io/name: slotgate
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
