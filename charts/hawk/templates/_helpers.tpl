{{/* The labels every object of a release carries; the selector uses the two that never change. */}}
{{- define "hawk.selectorLabels" -}}
app.kubernetes.io/name: hawk
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hawk.labels" -}}
{{ include "hawk.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* hawk's image: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "hawk.image" -}}
{{ .Values.hawk.image.repository }}:{{ .Values.hawk.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The headless Service that gives each pod's hawk API a DNS name. */}}
{{- define "hawk.apiServiceName" -}}
{{ .Release.Name }}-hawk-api
{{- end }}
