package otelexporter

import (
	"cmp"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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

// bucketLabel is the label a histogram's buckets add, after the
// attributes': le, the bucket's upper bound.
const bucketLabel = "le"

// unclash returns the label names of keys (pcpname.Labels): each key's
// labelName, but for one that reserved has (the registry's labels, from
// the resource or added by the program; a histogram's buckets' label le)
// or another key's, made exported_<name> (exported_le), as the scrape
// (package expose) and Prometheus rename a label that clashes, and
// exported_exported_<name> when that is taken, and so on. A key spelt as
// its label keeps it, or its first free rename, whatever the other keys of
// the first export: a resource's service_name made the key service_name
// exported_exported_service_name beside service.name and
// exported_service_name alone, when settled in key order.
func unclash(keys []attribute.Key, reserved []string) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = string(k)
	}
	return pcpname.Labels(names, reserved)
}

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

// ident is what the SDK tells one stream of data from another by: its
// scope (name, version, schema URL, attributes), its name, unit,
// description and kind. Streams of one PCP name whose idents differ are
// different instruments: one owns the metric, the others are conflicts.
type ident struct {
	scope                   instrumentation.Scope
	name, unit, description string
	kind                    kind
}

func identOf(scope instrumentation.Scope, m *metricdata.Metrics, k kind) ident {
	return ident{scope: scope, name: m.Name, unit: m.Unit, description: m.Description, kind: k}
}

// equal reports whether a and b are the same instrument.
func (a *ident) equal(b *ident) bool {
	return a.kind == b.kind && a.name == b.name && a.unit == b.unit && a.description == b.description &&
		a.scope.Name == b.scope.Name && a.scope.Version == b.scope.Version && a.scope.SchemaURL == b.scope.SchemaURL &&
		a.scope.Attributes.Equals(&b.scope.Attributes)
}

// compare orders instruments: by scope name, version, schema URL and
// attributes (compareSets), then by name, unit, description and kind. Of
// the instruments that first take a PCP name in one export, the first in
// this order gets it.
func (a *ident) compare(b *ident) int {
	return cmp.Or(strings.Compare(a.scope.Name, b.scope.Name), strings.Compare(a.scope.Version, b.scope.Version),
		strings.Compare(a.scope.SchemaURL, b.scope.SchemaURL), compareSets(&a.scope.Attributes, &b.scope.Attributes),
		strings.Compare(a.name, b.name), strings.Compare(a.unit, b.unit),
		strings.Compare(a.description, b.description), cmp.Compare(a.kind, b.kind))
}

// compareSets orders attribute sets by their attributes in key order:
// key, then the value's type, then the value as OpenTelemetry prints it.
// Unequal sets never compare equal: as attribute.DefaultEncoder writes
// them, an int 1 and a string "1" did, and which scope got a name then
// followed the SDK's order.
func compareSets(a, b *attribute.Set) int {
	ia, ib := a.Iter(), b.Iter()
	for {
		na, nb := ia.Next(), ib.Next()
		if !na || !nb {
			return cmp.Compare(a.Len(), b.Len())
		}
		x, y := ia.Attribute(), ib.Attribute()
		if c := cmp.Or(strings.Compare(string(x.Key), string(y.Key)), cmp.Compare(x.Value.Type(), y.Value.Type()),
			strings.Compare(x.Value.Emit(), y.Value.Emit())); c != 0 {
			return c
		}
	}
}

// what says what kind of instrument id is, with its unit, and its
// description when other's differs, for a conflict's error.
func (a *ident) what(other *ident) string {
	article := "a"
	if strings.IndexByte("aeiou", kindNames[a.kind][0]) >= 0 {
		article = "an"
	}
	s := fmt.Sprintf("%s %s in unit %q", article, kindNames[a.kind], a.unit)
	if a.description != other.description {
		s += fmt.Sprintf(" described %q", a.description)
	}
	return s
}

// owner names an instrument of a scope, for errors: the scope's version,
// schema URL and attributes when it has them, which tell apart scopes of
// one name.
func owner(scope instrumentation.Scope, name string) string {
	s := fmt.Sprintf("instrument %q of scope %q", name, scope.Name)
	if scope.Version != "" {
		s += fmt.Sprintf(" version %q", scope.Version)
	}
	if scope.SchemaURL != "" {
		s += fmt.Sprintf(" schema %q", scope.SchemaURL)
	}
	if scope.Attributes.Len() > 0 {
		s += fmt.Sprintf(" attributes %q", scope.Attributes.Encoded(attribute.DefaultEncoder()))
	}
	return s
}
