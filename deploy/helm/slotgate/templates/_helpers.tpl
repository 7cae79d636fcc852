{{/*
Names and labels. Every template here reads only .Values, .Release and
.Chart, so a parent chart may call the named templates with this chart's
own context: {{ include "slotgate.initContainers" .Subcharts.slotgate }}.
*/}}

{{- define "slotgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "slotgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "slotgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of the pods this release selects (deployment mode). */}}
{{- define "slotgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slotgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pod selector: the chart's own pods, or sidecar.selector. */}}
{{- define "slotgate.podSelector" -}}
{{- if eq .Values.mode "sidecar" -}}
{{- toYaml .Values.sidecar.selector -}}
{{- else -}}
{{- include "slotgate.selectorLabels" . -}}
{{- end -}}
{{- end -}}

{{- define "slotgate.labels" -}}
helm.sh/chart: {{ include "slotgate.chart" . }}
{{ include "slotgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: inference-worker
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{- define "slotgate.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag | toString) -}}
{{- end -}}
{{- end -}}

{{- define "slotgate.tokenSecretName" -}}
{{- if .Values.admin.token.existingSecret -}}
{{- .Values.admin.token.existingSecret -}}
{{- else -}}
{{- printf "%s-admin-token" (include "slotgate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "slotgate.admissionConfigMapName" -}}
{{- if .Values.admission.existingConfigMap -}}
{{- .Values.admission.existingConfigMap -}}
{{- else -}}
{{- printf "%s-admission" (include "slotgate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "slotgate.admissionEnabled" -}}
{{- if or (not (kindIs "invalid" .Values.admission.policy)) .Values.admission.existingConfigMap -}}true{{- end -}}
{{- end -}}

{{/*
terminationGracePeriodSeconds by the grace rule: engine preStop sleep +
engine shutdown timeout + slotgate's teardown margin, unless set.
*/}}
{{- define "slotgate.gracePeriod" -}}
{{- $e := .Values.engine -}}
{{- $min := add (int64 $e.preStopSleepSeconds) (int64 $e.shutdownTimeoutSeconds) -}}
{{- if kindIs "invalid" .Values.pod.terminationGracePeriodSeconds -}}
{{- add $min (int64 .Values.pod.drainMarginSeconds) -}}
{{- else -}}
{{- $g := int64 .Values.pod.terminationGracePeriodSeconds -}}
{{- if lt $g $min -}}
{{- fail (printf "pod.terminationGracePeriodSeconds=%d breaks the grace rule: it must be at least engine.preStopSleepSeconds + engine.shutdownTimeoutSeconds = %d (plus a margin for slotgate's teardown, e.g. %d)" $g $min (add $min 15)) -}}
{{- end -}}
{{- $g -}}
{{- end -}}
{{- end -}}

{{/*
slotgate.grpcPort is slotgate's port of its own for gRPC calls
(SLOTGATE_GRPC_LISTEN): ports.grpc when set (0: none); unset, 9092 when
slotgate forwards gRPC to an engine (upstream.grpcUrl, or engine.grpcPort
in deployment mode), since grpc-go's own server there costs half the CPU
per streamed message of the proxy port's; else none. Empty: none.
*/}}
{{- define "slotgate.grpcPort" -}}
{{- $v := .Values -}}
{{- if not (kindIs "invalid" $v.ports.grpc) -}}
{{- if gt (int64 $v.ports.grpc) 0 }}{{ int64 $v.ports.grpc }}{{ end -}}
{{- else if or (not (kindIs "invalid" $v.upstream.grpcUrl)) (and (eq $v.mode "deployment") (not (kindIs "invalid" $v.engine.grpcPort))) -}}
9092
{{- end -}}
{{- end -}}
