{{/*
Helpers of the vscaler chart. Names and the namespace are fixed by DESIGN.md ("Registration,
certificates, manifests"), as in manifests/: the chart never derives them from the release name.
*/}}

{{/* vscaler.namespace: where every namespaced object lives. */}}
{{- define "vscaler.namespace" -}}vscaler-system{{- end -}}

{{/*
vscaler.watchNamespace: a mutate of vscaler.objects for files/namespaced.yaml (a copy of
manifests/namespaced/role.yaml): the Role and RoleBinding go to the namespace vscaler manages.
*/}}
{{- define "vscaler.watchNamespace" -}}
{{- if has .obj.kind (list "Role" "RoleBinding") }}
{{- $_ := set .obj.metadata "namespace" .ctx.Values.watchNamespace }}
{{- end }}
{{- end -}}

{{/* vscaler.labels: the labels of manifests/ plus Helm's own. */}}
{{- define "vscaler.labels" -}}
app.kubernetes.io/name: vscaler
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/*
vscaler.objects: every YAML document of the file at .path in the chart (a copy of manifests/,
see charts/generate.sh), each with Helm's labels added; documents without an object (comments
only) are skipped. .mutate, when set, names a template called with (dict "obj" OBJ "ctx" .ctx "arg" .arg)
that changes OBJ in place (caBundle, annotations); .arg is passed on to it as "arg". .skip, when
set, lists "Kind/name" of objects left out (the ClusterRole a namespaced install replaces).
*/}}
{{- define "vscaler.objects" -}}
{{- $ctx := .ctx -}}
{{- $mutate := .mutate | default "" -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" ($ctx.Files.Get .path) -1 }}
{{- $obj := fromYaml $doc }}
{{- if hasKey $obj "Error" }}
{{- fail (printf "chart file %s: %s" $.path $obj.Error) }}
{{- end }}
{{- if and $obj.kind (not (has (printf "%s/%s" $obj.kind $obj.metadata.name) ($.skip | default list))) }}
{{- $meta := $obj.metadata }}
{{- $_ := set $meta "labels" (merge (dict) (fromYaml (include "vscaler.labels" $ctx)) ($meta.labels | default dict)) }}
{{- if $mutate }}{{ include $mutate (dict "obj" $obj "ctx" $ctx "arg" $.arg) }}{{ end }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end -}}
