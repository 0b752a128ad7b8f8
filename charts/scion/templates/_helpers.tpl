{{/* Name of every object: gardener-extension-provider-<provider> (scion::deploy::Extension::resource_name). */}}
{{- define "scion.name" -}}
gardener-extension-provider-{{ required "value provider is required (aws, openstack, gcp, azure or alicloud)" .Values.provider }}
{{- end -}}

{{/* The extension name in Gardener's sense, provider-<provider>. */}}
{{- define "scion.extensionName" -}}
provider-{{ .Values.provider }}
{{- end -}}

{{- define "scion.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scion.name" . }}
{{- end -}}

{{- define "scion.labels" -}}
{{ include "scion.selectorLabels" . }}
app.kubernetes.io/part-of: scion
{{- end -}}

{{- define "scion.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if hasPrefix "sha256:" $tag -}}
{{ .Values.image.repository }}@{{ $tag }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}
