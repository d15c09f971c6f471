package prombridge_test

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/prombridge"
)

func TestName(t *testing.T) {
	counter, gauge := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	for _, c := range []struct {
		family string
		t      dto.MetricType
		want   string
	}{
		{"http_requests_total", counter, "http_requests"},
		{"http_requests_total", gauge, "http_requests_total"},
		{"job:rate5m", gauge, "job_rate5m"},
		{"_hidden", gauge, "x_hidden"},
		{"temp_°C", gauge, "temp___C"},
		{"_total", counter, "x"},
	} {
		assert.Equal(t, c.want, prombridge.Name(c.family, c.t), "%s %s", c.t, c.family)
	}
}

func TestUnits(t *testing.T) {
	for family, want := range map[string]mmv.Units{
		"request_duration_seconds":      mmv.Second,
		"process_cpu_seconds_total":     mmv.Second,
		"gc_pause_milliseconds":         mmv.Millisecond,
		"heap_bytes":                    mmv.Byte,
		"sent_bytes_total":              mmv.Byte,
		"http_requests_total":           mmv.Count,
		"cache_hit_ratio":               mmv.NoUnits,
		"room_temperature_celsius":      mmv.NoUnits,
		"build_info":                    mmv.NoUnits,
		"seconds":                       mmv.NoUnits,
		strings.Repeat("x", 300) + "_s": mmv.NoUnits,
	} {
		assert.Equal(t, want, prombridge.Units(family), family)
	}
}
