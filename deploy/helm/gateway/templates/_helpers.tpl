{{- define "gateway.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gateway.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gateway.selector" -}}
app.kubernetes.io/name: {{ include "gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "gateway.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The grace period: the chart's value, checked, or preStop + drain + 15 s. */}}
{{- define "gateway.grace" -}}
{{- $floor := add .Values.drainTimeoutSeconds .Values.preStopSleepSeconds }}
{{- if .Values.terminationGracePeriodSeconds }}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $floor) }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must exceed preStopSleepSeconds + drainTimeoutSeconds (%v)" .Values.terminationGracePeriodSeconds $floor) }}
{{- end }}
{{- .Values.terminationGracePeriodSeconds }}
{{- else }}
{{- add $floor 15 }}
{{- end }}
{{- end }}

{{/* DATABASE_URL from its Secret. */}}
{{- define "gateway.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "database.secretName is required" .Values.database.secretName }}
      key: {{ .Values.database.secretKey }}
{{- end }}

{{- define "gateway.adminTokenEnv" -}}
{{- if .Values.admin.secretName }}
- name: GATEWAY_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .Values.admin.secretName }}
      key: {{ .Values.admin.secretKey }}
{{- end }}
{{- end }}

{{- define "gateway.podSecurity" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
