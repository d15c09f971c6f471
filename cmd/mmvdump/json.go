package main

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// The JSON form holds what the text form prints, in the same order: the
// header, then the sections in TOC order, each with its records. Help texts
// a record does not have are null; names as in the text form are given
// next to the numeric codes.
type (
	jsonFile struct {
		File      string        `json:"file"`
		Version   int           `json:"version"`
		Gen1      uint64        `json:"gen1"`
		Gen2      uint64        `json:"gen2"`
		TOCs      int           `json:"tocs"`
		Cluster   uint32        `json:"cluster"`
		PID       int32         `json:"pid"`
		Flags     uint32        `json:"flags"`
		FlagNames []string      `json:"flagNames"`
		Sections  []jsonSection `json:"sections"`
	}
	jsonSection struct {
		Index     int            `json:"index"`
		TOCOffset uint64         `json:"tocOffset"`
		Type      string         `json:"type"`
		Offset    uint64         `json:"offset"`
		Count     int            `json:"count"`
		Indoms    []jsonIndom    `json:"indoms,omitempty"`
		Instances []jsonInstance `json:"instances,omitempty"`
		Metrics   []jsonMetric   `json:"metrics,omitempty"`
		Values    []jsonValue    `json:"values,omitempty"`
		Strings   []jsonString   `json:"strings,omitempty"`
		Labels    []jsonLabel    `json:"labels,omitempty"`
	}
	jsonIndom struct {
		Offset        uint64  `json:"offset"`
		Serial        uint32  `json:"serial"`
		Instances     int     `json:"instances"`
		FirstInstance uint64  `json:"firstInstance"`
		ShortHelp     *string `json:"shortHelp"`
		LongHelp      *string `json:"longHelp"`
	}
	jsonInstance struct {
		Offset uint64 `json:"offset"`
		Indom  uint32 `json:"indom"`
		ID     int32  `json:"id"`
		Name   string `json:"name"`
	}
	jsonMetric struct {
		Offset        uint64  `json:"offset"`
		Item          uint32  `json:"item"`
		Name          string  `json:"name"`
		Type          string  `json:"type"`
		TypeCode      int32   `json:"typeCode"`
		Semantics     string  `json:"semantics"`
		SemanticsCode int32   `json:"semanticsCode"`
		Pad           uint32  `json:"pad"`
		Units         string  `json:"units"`
		UnitsCode     uint32  `json:"unitsCode"`
		Indom         *uint32 `json:"indom"` // null when singular
		ShortHelp     *string `json:"shortHelp"`
		LongHelp      *string `json:"longHelp"`
	}
	jsonValue struct {
		Offset   uint64        `json:"offset"`
		Item     uint32        `json:"item"`
		Metric   string        `json:"metric"`
		Instance *jsonInstance `json:"instance"` // null when singular
		// Value is a number, or a string for String values and for NaN and
		// infinite floats ("NaN", "+Inf", "-Inf"); null, and NoValue true,
		// for a value the reader of -pcp's version shows as none (the
		// file's Sentinel flag with the reserved value: all ones, "", and
		// NaN for 7.2 only: noValue).
		Value   any  `json:"value"`
		NoValue bool `json:"noValue,omitempty"`
		// Stored is an Elapsed value's stored total, Value adding the open
		// interval, if any.
		Stored *int64 `json:"stored,omitempty"`
		Extra  int64  `json:"extra"`
	}
	jsonString struct {
		Offset uint64 `json:"offset"`
		Text   string `json:"text"`
	}
	jsonLabel struct {
		Offset   uint64 `json:"offset"`
		Payload  string `json:"payload"`
		Flags    uint32 `json:"flags"`
		Identity uint32 `json:"identity"`
		Internal int32  `json:"internal"`
	}
)

func toJSON(path string, f *mmvfile.File, now time.Time, pcp mmvfile.PCP) *jsonFile {
	h := f.Header
	j := &jsonFile{
		File: path, Version: h.Version, Gen1: h.Gen1, Gen2: h.Gen2, TOCs: h.TOCs,
		Cluster: h.Cluster, PID: h.PID, Flags: uint32(h.Flags),
		FlagNames: strings.Split(h.Flags.String(), ","),
		Sections:  []jsonSection{},
	}
	if h.Flags == 0 {
		j.FlagNames = []string{}
	}
	for i, s := range f.TOC {
		js := jsonSection{Index: i, TOCOffset: s.TOCOffset, Type: s.Type.String(), Offset: s.Offset, Count: s.Count}
		switch s.Type {
		case mmvfile.Indoms:
			for _, in := range f.Indoms {
				js.Indoms = append(js.Indoms, jsonIndom{in.Offset, in.Serial, len(in.Instances), in.FirstInstance,
					text(in.ShortHelp), text(in.LongHelp)})
			}
		case mmvfile.Instances:
			for _, inst := range f.Instances {
				js.Instances = append(js.Instances, instance(inst))
			}
		case mmvfile.Metrics:
			for _, m := range f.Metrics {
				jm := jsonMetric{m.Offset, m.Item, m.Name, m.Type.String(), int32(m.Type), m.Semantics.String(),
					int32(m.Semantics), m.Pad, m.Units.String(), uint32(m.Units), nil, text(m.ShortHelp), text(m.LongHelp)}
				if !m.Singular() {
					jm.Indom = &m.Indom
				}
				js.Metrics = append(js.Metrics, jm)
			}
		case mmvfile.Values:
			for _, v := range f.Values {
				js.Values = append(js.Values, value(v, now, f.Header.Flags&mmv.Sentinel != 0, pcp))
			}
		case mmvfile.Strings:
			for _, str := range f.Strings {
				js.Strings = append(js.Strings, jsonString{str.Offset, str.Text})
			}
		case mmvfile.Labels:
			for _, l := range f.Labels {
				js.Labels = append(js.Labels, jsonLabel{l.Offset, l.Payload, l.Flags, l.Identity, l.Internal})
			}
		}
		j.Sections = append(j.Sections, js)
	}
	return j
}

func text(t mmvfile.Text) *string {
	if t.Offset == 0 {
		return nil
	}
	return &t.Text
}

// noValue reports whether v holds the value a file with the Sentinel flag
// reserves for no value, as the reader of pcp shows it: an integer's 8
// bytes all ones, an empty string, and from PCP 6.3.1 a NaN (6.0.3 shows
// nan, docs/reader.md).
func noValue(v *mmvfile.Value, pcp mmvfile.PCP) bool {
	switch v.Metric.Type {
	case mmv.Float, mmv.Double:
		return pcp >= mmvfile.PCP72 && math.IsNaN(v.Float)
	case mmv.String:
		return v.String == ""
	}
	return v.Atom == [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}

func instance(inst *mmvfile.Instance) jsonInstance {
	var serial uint32 // of an empty record: none
	if inst.Indom != nil {
		serial = inst.Indom.Serial
	}
	return jsonInstance{inst.Offset, serial, inst.ID, inst.Name}
}

func value(v *mmvfile.Value, now time.Time, sentinel bool, pcp mmvfile.PCP) jsonValue {
	jv := jsonValue{Offset: v.Offset, Item: v.Metric.Item, Metric: v.Metric.Name, Extra: v.Extra}
	if v.Instance != nil {
		inst := instance(v.Instance)
		jv.Instance = &inst
	}
	if sentinel && noValue(v, pcp) {
		jv.NoValue = true
		return jv
	}
	switch v.Metric.Type {
	case mmv.Int32, mmv.Int64:
		jv.Value = v.Int
	case mmv.Uint32, mmv.Uint64:
		jv.Value = v.Uint
	case mmv.Float, mmv.Double:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			jv.Value = strconv.FormatFloat(v.Float, 'g', -1, 64) // NaN, +Inf, -Inf
		} else {
			jv.Value = v.Float
		}
	case mmv.String:
		jv.Value = v.String
	case mmv.Elapsed:
		jv.Value = v.Elapsed(now)
		jv.Stored = &v.Int
	}
	return jv
}
