{{/*
The slotgate container as a native sidecar: one initContainers entry with
restartPolicy: Always (Kubernetes 1.29+). A mapping, without the leading
"- ". From a parent chart that has this chart as the dependency "slotgate":

  initContainers:
    {{- include "slotgate.initContainers" .Subcharts.slotgate | nindent 4 }}
  volumes:
    {{- include "slotgate.volumes" .Subcharts.slotgate | nindent 4 }}

or, for one entry among others:

  initContainers:
    - {{- include "slotgate.sidecarContainer" .Subcharts.slotgate | nindent 6 }}
*/}}
{{- define "slotgate.sidecarContainer" -}}
{{- include "slotgate.validate" . -}}
{{- $v := .Values -}}
{{- $c := $v.container -}}
name: {{ $c.name }}
image: {{ include "slotgate.image" . | quote }}
imagePullPolicy: {{ $v.image.pullPolicy }}
restartPolicy: Always
ports:
  - name: {{ $v.ports.proxyName }}
    containerPort: {{ int64 $v.ports.proxy }}
    protocol: TCP
  - name: {{ $v.ports.adminName }}
    containerPort: {{ int64 $v.ports.admin }}
    protocol: TCP
  {{- if not (kindIs "invalid" $v.ports.adminGrpc) }}
  - name: {{ $v.ports.adminGrpcName }}
    containerPort: {{ int64 $v.ports.adminGrpc }}
    protocol: TCP
  {{- end }}
  {{- with include "slotgate.grpcPort" . }}
  - name: {{ $v.ports.grpcName }}
    containerPort: {{ . }}
    protocol: TCP
  {{- end }}
env:
  {{- include "slotgate.env" . | trim | nindent 2 }}
startupProbe:
  httpGet:
    path: /livez
    port: {{ int64 $v.ports.admin }}
  periodSeconds: {{ int64 $c.probes.startup.periodSeconds }}
  timeoutSeconds: {{ int64 $c.probes.startup.timeoutSeconds }}
  failureThreshold: {{ int64 $c.probes.startup.failureThreshold }}
livenessProbe:
  httpGet:
    path: /livez
    port: {{ int64 $v.ports.admin }}
  periodSeconds: {{ int64 $c.probes.liveness.periodSeconds }}
  timeoutSeconds: {{ int64 $c.probes.liveness.timeoutSeconds }}
  failureThreshold: {{ int64 $c.probes.liveness.failureThreshold }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ int64 $v.ports.admin }}
  periodSeconds: {{ int64 $c.probes.readiness.periodSeconds }}
  timeoutSeconds: {{ int64 $c.probes.readiness.timeoutSeconds }}
  failureThreshold: {{ int64 $c.probes.readiness.failureThreshold }}
{{- if $c.preStopDrain }}
lifecycle:
  preStop:
    exec:
      command:
        {{- range $c.drainCommand }}
        - {{ . | quote }}
        {{- end }}
{{- end }}
{{- with $c.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.securityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $mounts := include "slotgate.volumeMounts" . }}
{{- if $mounts }}
volumeMounts:
  {{- $mounts | trim | nindent 2 }}
{{- end }}
terminationMessagePolicy: FallbackToLogsOnError
{{- end -}}

{{/* initContainers: a list holding the slotgate sidecar. */}}
{{- define "slotgate.initContainers" -}}
- {{ include "slotgate.sidecarContainer" . | nindent 2 | trim }}
{{- end -}}

{{- define "slotgate.volumeMounts" -}}
{{- $v := .Values -}}
{{- if $v.admin.token.enabled }}
- name: slotgate-admin-token
  mountPath: {{ $v.admin.token.mountPath }}
  readOnly: true
{{- end }}
{{- if include "slotgate.admissionEnabled" . }}
- name: slotgate-admission
  mountPath: {{ $v.admission.mountPath }}
  readOnly: true
{{- end }}
{{- with $v.container.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The pod volumes slotgate's container mounts (the admin token Secret, whole,
never subPath; the admission policy ConfigMap), as list entries; nothing
when neither is enabled.
*/}}
{{- define "slotgate.volumes" -}}
{{- $v := .Values -}}
{{- if $v.admin.token.enabled }}
- name: slotgate-admin-token
  secret:
    secretName: {{ include "slotgate.tokenSecretName" . }}
    defaultMode: {{ int64 $v.admin.token.defaultMode }}
    items:
      - key: {{ $v.admin.token.key }}
        path: {{ $v.admin.token.key }}
{{- end }}
{{- if include "slotgate.admissionEnabled" . }}
- name: slotgate-admission
  configMap:
    name: {{ include "slotgate.admissionConfigMapName" . }}
    items:
      - key: {{ $v.admission.key }}
        path: {{ $v.admission.key }}
{{- end }}
{{- end -}}
