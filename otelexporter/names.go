package otelexporter

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv/internal/pcpname"
)

// metricName returns the PCP name of an instrument of a scope: the last
// element of the scope's name (after its last '/'), then the instrument's
// name, each part between dots made a PCP name part (every byte other than
// a letter, digit or '_' turned into '_', an "x" put before a part that
// does not start with a letter).
func metricName(scope instrumentation.Scope, instrument string) string {
	name := instrument
	if s := scope.Name[strings.LastIndexByte(scope.Name, '/')+1:]; s != "" {
		name = s + "." + instrument
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = pcpname.Part(p, "x")
	}
	return strings.Join(parts, ".")
}

// labelName returns the PCP label name of an attribute key, such as
// http_request_method for http.request.method.
func labelName(k attribute.Key) string { return pcpname.Part(string(k), "x") }

// serviceName returns the resource's service.name, "" when it has none.
func serviceName(res *resource.Resource) string {
	v, _ := res.Set().Value("service.name")
	return v.Emit()
}

// fileName returns the file name of a service: its name made a PCP name
// part, "otel" when it has none.
func fileName(service string) string {
	if service == "" {
		return "otel"
	}
	return pcpname.Part(service, "otel_")
}
