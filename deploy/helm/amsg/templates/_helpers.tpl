{{/* The name of every object of the release. */}}
{{- define "amsg.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "amsg.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "amsg.labels" -}}
{{ include "amsg.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* SQLite keeps one writer: refuse more than one replica without PostgreSQL. */}}
{{- define "amsg.checkValues" -}}
{{- if and (not .Values.postgres.enabled) (gt (int .Values.replicaCount) 1) -}}
{{- fail "replicaCount > 1 needs postgres.enabled=true: SQLite runs one replica (README, \"Scaling out\")" -}}
{{- end -}}
{{- if and .Values.postgres.enabled (not .Values.postgres.existingSecret) -}}
{{- fail "postgres.enabled needs postgres.existingSecret: a Secret with AMSG_DATABASE_URL" -}}
{{- end -}}
{{- end -}}
