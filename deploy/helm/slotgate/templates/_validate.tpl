{{/*
Rules across values that values.schema.json cannot state. Each failure
names the values and what slotgate (or Kubernetes) would do with them.
Renders nothing.
*/}}
{{- define "slotgate.validate" -}}
{{- $v := .Values -}}
{{- $hasN := or (not (kindIs "invalid" $v.limits.engineRequestLimit)) (not (kindIs "invalid" $v.dynamo15.engineRequestLimit)) -}}
{{- $hasW := or (not (kindIs "invalid" $v.limits.engineRequestWaitingLimit)) (not (kindIs "invalid" $v.dynamo17.engineWaitLimit)) -}}
{{- if and (not (kindIs "invalid" $v.limits.requestQueueLimit)) (gt (int64 $v.limits.requestQueueLimit) 0) (not $hasN) (not $hasW) -}}
{{- fail "limits.requestQueueLimit > 0 needs N or W (limits.engineRequestLimit, limits.engineRequestWaitingLimit, or their Dynamo names): slotgate refuses to start with a queue and no engine limit" -}}
{{- end -}}
{{- range $name := list "enginePrefillTokenLimit" "requestQueueTokenLimit" -}}
{{- $t := index $v.limits $name -}}
{{- if and (not (kindIs "invalid" $t)) (gt (int64 $t) 0) (not $hasN) (not $hasW) -}}
{{- fail (printf "limits.%s > 0 needs N or W (limits.engineRequestLimit, limits.engineRequestWaitingLimit, or their Dynamo names): slotgate refuses to start with a token limit and no engine limit" $name) -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.mode "sidecar") (empty $v.sidecar.selector) -}}
{{- fail "mode: sidecar needs sidecar.selector: the labels of the existing engine pods, for the Service and PodMonitor" -}}
{{- end -}}
{{- if and $v.admin.token.enabled (not $v.admin.token.existingSecret) (not $v.admin.token.create) -}}
{{- fail "admin.token.enabled needs admin.token.existingSecret, or admin.token.create with admin.token.value" -}}
{{- end -}}
{{- if and $v.admin.token.enabled $v.admin.token.create (not $v.admin.token.existingSecret) (not $v.admin.token.value) -}}
{{- fail "admin.token.create needs admin.token.value (or use admin.token.existingSecret)" -}}
{{- end -}}
{{- if and (not (kindIs "invalid" $v.admission.policy)) $v.admission.existingConfigMap -}}
{{- fail "set admission.policy or admission.existingConfigMap, not both" -}}
{{- end -}}
{{- /* Every port of the pod is in one network namespace. */ -}}
{{- $ports := list (int64 $v.ports.proxy) (int64 $v.ports.admin) -}}
{{- if not (kindIs "invalid" $v.ports.adminGrpc) }}{{ $ports = append $ports (int64 $v.ports.adminGrpc) }}{{ end -}}
{{- with include "slotgate.grpcPort" . }}{{ $ports = append $ports (int64 .) }}{{ end -}}
{{- if eq $v.mode "deployment" -}}
{{- $ports = append $ports (int64 $v.engine.port) -}}
{{- if not (kindIs "invalid" $v.engine.grpcPort) }}{{ $ports = append $ports (int64 $v.engine.grpcPort) }}{{ end -}}
{{- end -}}
{{- if ne (len $ports) (len (uniq $ports)) -}}
{{- fail (printf "ports collide in the pod's network namespace: %v (ports.proxy, ports.admin, ports.adminGrpc, ports.grpc, engine.port, engine.grpcPort must all differ)" $ports) -}}
{{- end -}}
{{- $names := list $v.ports.proxyName $v.ports.adminName -}}
{{- if not (kindIs "invalid" $v.ports.adminGrpc) }}{{ $names = append $names $v.ports.adminGrpcName }}{{ end -}}
{{- if not (kindIs "invalid" $v.ports.grpc) }}{{ $names = append $names $v.ports.grpcName }}{{ end -}}
{{- if eq $v.mode "deployment" -}}
{{- $names = append $names $v.engine.portName -}}
{{- if not (kindIs "invalid" $v.engine.grpcPort) }}{{ $names = append $names $v.engine.grpcPortName }}{{ end -}}
{{- end -}}
{{- if ne (len $names) (len (uniq $names)) -}}
{{- fail (printf "port names collide: %v" $names) -}}
{{- end -}}
{{- if and $v.podMonitor.enabled $v.podMonitor.engine.enabled (eq (toString $v.engineMetrics.dialect) "trtllm") (eq $v.podMonitor.engine.path "/metrics") -}}
{{- fail "TensorRT-LLM's /metrics drains on read: a PodMonitor scraping it takes iterations from slotgate's load. Set podMonitor.engine.path to /prometheus/metrics (with return_perf_metrics: true) or podMonitor.engine.enabled: false" -}}
{{- end -}}
{{- if and $v.podMonitor.enabled $v.podMonitor.engine.enabled (eq $v.mode "sidecar") (not $v.podMonitor.engine.port) -}}
{{- fail "mode: sidecar with podMonitor.engine.enabled needs podMonitor.engine.port: the name of the engine's container port in the existing pods (or podMonitor.engine.enabled: false)" -}}
{{- end -}}
{{- if and $v.networkPolicy.enabled $v.podMonitor.enabled (empty $v.networkPolicy.metricsFrom) -}}
{{- fail "networkPolicy.enabled with podMonitor.enabled needs networkPolicy.metricsFrom (the Prometheus pods): otherwise the policy closes the admin port to the scraper" -}}
{{- end -}}
{{- if eq $v.mode "deployment" -}}
{{- $gpu := $v.engine.gpu.resource -}}
{{- $res := $v.engine.resources | default dict -}}
{{- if or (hasKey ($res.requests | default dict) $gpu) (hasKey ($res.limits | default dict) $gpu) -}}
{{- fail (printf "engine.resources lists %s: set engine.gpu.count instead, which puts it in both requests and limits" $gpu) -}}
{{- end -}}
{{- end -}}
{{- end -}}
