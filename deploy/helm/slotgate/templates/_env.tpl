{{/*
One env entry, only when the value is set (not null): (list NAME VALUE KIND),
KIND int (whole numbers, never 1e+06), bool, or str (strings, durations,
fractions).
*/}}
{{- define "slotgate.envVar" -}}
{{- $name := index . 0 -}}
{{- $val := index . 1 -}}
{{- $kind := index . 2 -}}
{{- if not (kindIs "invalid" $val) }}
- name: {{ $name }}
  {{- if eq $kind "int" }}
  value: {{ int64 $val | toString | quote }}
  {{- else if eq $kind "bool" }}
  value: {{ ternary "true" "false" $val | quote }}
  {{- else }}
  value: {{ toString $val | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The listen address of a port: ":port", or "$(POD_IP):port". */}}
{{- define "slotgate.adminAddr" -}}
{{- if .root.Values.admin.bindPodIP -}}$(POD_IP){{- end -}}:{{ int64 .port }}
{{- end -}}

{{/*
Every slotgate setting as environment variables. Ports are always rendered;
everything else only when set, so slotgate's defaults apply otherwise.
*/}}
{{- define "slotgate.env" -}}
{{- $v := .Values -}}
{{- if $v.admin.bindPodIP }}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end }}
{{- /* ports */}}
- name: SLOTGATE_LISTEN
  value: {{ printf ":%d" (int64 $v.ports.proxy) | quote }}
- name: SLOTGATE_ADMIN_LISTEN
  value: {{ include "slotgate.adminAddr" (dict "root" . "port" $v.ports.admin) | quote }}
- name: SLOTGATE_ADMIN_GRPC_LISTEN
  {{- if kindIs "invalid" $v.ports.adminGrpc }}
  value: "off"
  {{- else }}
  value: {{ include "slotgate.adminAddr" (dict "root" . "port" $v.ports.adminGrpc) | quote }}
  {{- end }}
{{- with include "slotgate.grpcPort" . }}
- name: SLOTGATE_GRPC_LISTEN
  value: {{ printf ":%s" . | quote }}
{{- end }}
{{- /* limits: N, W, Q */}}
{{- include "slotgate.envVar" (list "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT" $v.limits.engineRequestLimit "int") }}
{{- include "slotgate.envVar" (list "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT" $v.limits.engineRequestWaitingLimit "int") }}
{{- include "slotgate.envVar" (list "DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT" $v.limits.requestQueueLimit "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ENGINE_PREFILL_TOKEN_LIMIT" $v.limits.enginePrefillTokenLimit "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_REQUEST_QUEUE_TOKEN_LIMIT" $v.limits.requestQueueTokenLimit "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_PER_RANK_LIMITS" $v.limits.perRankLimits "bool") }}
{{- /* Dynamo 1.5 and 1.7 names */}}
{{- include "slotgate.envVar" (list "DYN_ENGINE_REQUEST_LIMIT" $v.dynamo15.engineRequestLimit "int") }}
{{- include "slotgate.envVar" (list "DYN_DYNAMO_REQUEST_QUEUE_LIMIT" $v.dynamo15.requestQueueLimit "int") }}
{{- include "slotgate.envVar" (list "DYN_BACKEND_ADMISSION_ENGINE_WAIT_LIMIT" $v.dynamo17.engineWaitLimit "int") }}
{{- include "slotgate.envVar" (list "DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS" $v.dynamo17.requestQueueTimeoutMs "int") }}
{{- /* queue and overload */}}
{{- include "slotgate.envVar" (list "SLOTGATE_QUEUE_TIMEOUT" $v.queue.timeout "str") }}
{{- include "slotgate.envVar" (list "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_CONTROLLED_DELAY" $v.queue.controlledDelay "bool") }}
{{- include "slotgate.envVar" (list "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_ADAPTIVE_LIFO" $v.queue.adaptiveLifo "bool") }}
{{- include "slotgate.envVar" (list "DYN_HTTP_OVERLOAD_STATUS_CODE" $v.overload.statusCode "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_RETRY_AFTER" $v.overload.retryAfter "str") }}
{{- /* busy */}}
{{- include "slotgate.envVar" (list "DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD" $v.busy.activeDecodeBlocksThreshold "str") }}
{{- include "slotgate.envVar" (list "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD" $v.busy.activePrefillTokensThreshold "int") }}
{{- include "slotgate.envVar" (list "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC" $v.busy.activePrefillTokensThresholdFrac "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_REJECT_WHEN_BUSY" $v.busy.rejectWhenBusy "bool") }}
{{- include "slotgate.envVar" (list "SLOTGATE_MODEL_NAME" $v.busy.modelName "str") }}
{{- /* timeouts and bodies */}}
{{- include "slotgate.envVar" (list "SLOTGATE_REQUEST_HEADER_TIMEOUT" $v.timeouts.requestHeader "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_REQUEST_BODY_TIMEOUT" $v.timeouts.requestBody "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_SHUTDOWN_TIMEOUT" $v.timeouts.shutdown "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_DRAIN_DELAY" $v.timeouts.drainDelay "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ABORT_GRACE" $v.timeouts.abortGrace "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_FIRST_TOKEN_TIMEOUT" $v.timeouts.firstTokenTimeout "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_FIRST_TOKEN_TIMEOUT_PER_1K_TOKENS" $v.timeouts.firstTokenTimeoutPer1kTokens "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_MAX_REQUEST_BODY_BYTES" $v.bodies.maxRequestBodyBytes "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_MAX_BUFFERED_BODY_BYTES" $v.bodies.maxBufferedBodyBytes "int") }}
{{- /* the engine */}}
{{- $url := $v.upstream.url -}}
{{- if and (kindIs "invalid" $url) (eq $v.mode "deployment") -}}
{{- $url = printf "http://127.0.0.1:%d" (int64 $v.engine.port) -}}
{{- end -}}
{{- include "slotgate.envVar" (list "SLOTGATE_ENGINE_URL" $url "str") }}
{{- $grpcUrl := $v.upstream.grpcUrl -}}
{{- if and (kindIs "invalid" $grpcUrl) (eq $v.mode "deployment") (not (kindIs "invalid" $v.engine.grpcPort)) -}}
{{- $grpcUrl = printf "http://127.0.0.1:%d" (int64 $v.engine.grpcPort) -}}
{{- end -}}
{{- include "slotgate.envVar" (list "SLOTGATE_ENGINE_GRPC_URL" $grpcUrl "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_GRPC_MAX_MESSAGE_BYTES" $v.upstream.grpcMaxMessageBytes "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ENGINE_HEALTH_PATH" $v.upstream.healthPath "str") }}
{{- if not (kindIs "invalid" $v.upstream.passthroughPaths) }}
{{- include "slotgate.envVar" (list "SLOTGATE_PASSTHROUGH_PATHS" (default "," (join "," $v.upstream.passthroughPaths)) "str") }}
{{- end }}
{{- include "slotgate.envVar" (list "SLOTGATE_ENGINE_METRICS_DIALECT" $v.engineMetrics.dialect "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ENGINE_METRICS_INTERVAL" $v.engineMetrics.interval "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_KV_TOTAL_BLOCKS" $v.engineMetrics.kvTotalBlocks "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_BLOCK_SIZE" $v.engineMetrics.blockSize "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_MAX_NUM_BATCHED_TOKENS" $v.engineMetrics.maxNumBatchedTokens "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_DATA_PARALLEL_SIZE" $v.engineMetrics.dataParallelSize "int") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ORCA_HEADER" $v.orca.header "bool") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ORCA_FORMAT" $v.orca.format "str") }}
{{- /* admin, admission, logging, profiling */}}
{{- if $v.admin.token.enabled }}
- name: SLOTGATE_ADMIN_TOKEN_FILE
  value: {{ printf "%s/%s" (trimSuffix "/" $v.admin.token.mountPath) $v.admin.token.key | quote }}
{{- end }}
{{- if include "slotgate.admissionEnabled" . }}
- name: SLOTGATE_ADMISSION_CONFIG
  value: {{ printf "%s/%s" (trimSuffix "/" $v.admission.mountPath) $v.admission.key | quote }}
{{- end }}
{{- include "slotgate.envVar" (list "SLOTGATE_LOG_LEVEL" $v.logging.level "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_LOG_FORMAT" $v.logging.format "str") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ACCESS_LOG" $v.logging.accessLog "bool") }}
{{- include "slotgate.envVar" (list "SLOTGATE_ENABLE_PROFILING" $v.profiling.enabled "bool") }}
{{- /* processors: from the CPU request unless set */}}
{{- if eq (toString $v.container.maxProcs) "fromCPURequest" }}
- name: SLOTGATE_MAX_PROCS
  valueFrom:
    resourceFieldRef:
      resource: requests.cpu
      divisor: "1"
{{- else }}
{{- include "slotgate.envVar" (list "SLOTGATE_MAX_PROCS" $v.container.maxProcs "int") }}
{{- end }}
{{- include "slotgate.envVar" (list "SLOTGATE_RELAY_LOOPS" $v.container.relayLoops "int") }}
{{- with $v.container.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
