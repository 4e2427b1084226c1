{{/*
Names, labels and the controller's arguments, shared by every template.
*/}}

{{/* The chart's name, or nameOverride. */}}
{{- define "fairbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: fullnameOverride, else the release name
(with the chart's name appended unless the release name contains it).
Truncated so that "<prefix>-controller" still fits a 63-character label.
*/}}
{{- define "fairbench.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The controller's Deployment, Service and (by default) leader Lease. */}}
{{- define "fairbench.controllerName" -}}
{{- printf "%s-controller" (include "fairbench.fullname" .) }}
{{- end }}

{{- define "fairbench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "fairbench.labels" -}}
helm.sh/chart: {{ include "fairbench.chart" . }}
{{ include "fairbench.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: fairbench
{{- end }}

{{/* The labels the Deployment selects its pods by (never change them: a selector is immutable). */}}
{{- define "fairbench.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fairbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "fairbench.controllerSelectorLabels" -}}
{{ include "fairbench.selectorLabels" . }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "fairbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fairbench.controllerName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the ServiceAccount to run the controller as (serviceAccount.create is false)" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the agents' token (data.token). */}}
{{- define "fairbench.agentTokenSecretName" -}}
{{- default (printf "%s-agent-token" (include "fairbench.fullname" .)) .Values.agentToken.existingSecret }}
{{- end }}

{{/* The agents' TLS Secrets: the controller's (tls.crt, tls.key, ca.crt) and the agents' (ca.crt, tls.crt, tls.key). */}}
{{- define "fairbench.controllerTlsSecretName" -}}
{{- if .Values.agentTls.generate }}
{{- printf "%s-controller-tls" (include "fairbench.fullname" .) }}
{{- else }}
{{- default (printf "%s-controller-tls" (include "fairbench.fullname" .)) .Values.agentTls.controllerSecret }}
{{- end }}
{{- end }}

{{- define "fairbench.agentTlsSecretName" -}}
{{- if .Values.agentTls.generate }}
{{- printf "%s-agent-tls" (include "fairbench.fullname" .) }}
{{- else }}
{{- default (printf "%s-agent-tls" (include "fairbench.fullname" .)) .Values.agentTls.agentSecret }}
{{- end }}
{{- end }}

{{- define "fairbench.leaderElectionId" -}}
{{- default (include "fairbench.controllerName" .) .Values.controller.leaderElection.id }}
{{- end }}

{{/* Where the load-slot Lease lives: shared by every installation naming the same one. */}}
{{- define "fairbench.loadSlotNamespace" -}}
{{- default .Release.Namespace .Values.loadSlot.namespace }}
{{- end }}

{{- define "fairbench.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "fairbench.controllerImage" -}}
{{- $image := .Values.controller.image }}
{{- printf "%s/%s:%s" (default .Values.image.registry $image.registry) $image.repository (default (include "fairbench.imageTag" .) $image.tag) }}
{{- end }}

{{- define "fairbench.agentImage" -}}
{{- $image := .Values.agent.image }}
{{- printf "%s/%s:%s" (default .Values.image.registry $image.registry) $image.repository (default (include "fairbench.imageTag" .) $image.tag) }}
{{- end }}

{{/* HOST:PORT the agent pods dial: the controller's Service. */}}
{{- define "fairbench.agentAddress" -}}
{{- printf "%s.%s.svc:%d" (include "fairbench.controllerName" .) .Release.Namespace (int .Values.controller.agentPort) }}
{{- end }}
