{{/* The chart's name: app.kubernetes.io/name of every object. */}}
{{- define "summa-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's base name of objects: the release name, prefixed unless it
already holds the chart's name. */}}
{{- define "summa-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "summa-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "summa-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: summa
{{- end }}

{{/* Labels that select the operator's pods. */}}
{{- define "summa-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "summa-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the operator runs as. */}}
{{- define "summa-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "summa-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image reference from {repository, tag, digest}; the tag defaults to
the chart's appVersion, a digest wins. Call with (list .Values.image .). */}}
{{- define "summa-operator.imageRef" -}}
{{- $img := index . 0 }}
{{- $root := index . 1 }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/* The rules of a Role or ClusterRole copied from config/rbac into
files/rbac by `make chart-sync`: the chart and config/ share one source. */}}
{{- define "summa-operator.rules" -}}
{{- $doc := .Files.Get (printf "files/rbac/%s" .file) | fromYaml }}
{{- if not $doc.rules }}
{{- fail (printf "files/rbac/%s has no rules: run make chart-sync" .file) }}
{{- end }}
{{- toYaml $doc.rules }}
{{- end }}

{{/* The rules of the operator's ClusterRole on resources that have no
namespace (StorageClasses, TokenReviews, SubjectAccessReviews, reading the
SummaIndex CRD): in the
namespaced mode they are all it holds cluster-wide. */}}
{{- define "summa-operator.clusterScopedRules" -}}
{{- $doc := .Files.Get (printf "files/rbac/%s" .file) | fromYaml }}
{{- $out := list }}
{{- range $doc.rules }}
{{- $kept := list }}
{{- range .resources }}
{{- if has . (list "storageclasses" "tokenreviews" "subjectaccessreviews" "customresourcedefinitions") }}
{{- $kept = append $kept . }}
{{- end }}
{{- end }}
{{- if $kept }}
{{- $rule := dict "apiGroups" .apiGroups "resources" $kept "verbs" .verbs }}
{{- if .resourceNames }}{{- $_ := set $rule "resourceNames" .resourceNames }}{{- end }}
{{- $out = append $out $rule }}
{{- end }}
{{- end }}
{{- if not $out }}
{{- fail (printf "files/rbac/%s has no cluster-scoped rules: run make chart-sync" .file) }}
{{- end }}
{{- toYaml $out }}
{{- end }}
