package fleet

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// part is what one group of a host's series costs in the key server.
type part struct {
	Group     string `json:"group"`
	Series    int    `json:"series"`
	Instances int    `json:"instances"`
	Bytes     int64  `json:"bytes"` // MEMORY USAGE of the series' own keys
}

// seriesGroup names the part of the service a metric belongs to, by its
// name under mmv.<service>.
func seriesGroup(name string) string {
	switch {
	case strings.HasPrefix(name, "go."):
		return "runtime bridge (go.*)"
	case name == "http.latency.bucket":
		return "latency buckets"
	case name == "http.latency.min", name == "http.latency.max", name == "http.latency.mean":
		return "latency min, max, mean"
	case strings.HasPrefix(name, "http.latency.p"):
		return "latency quantiles"
	case strings.HasPrefix(name, "http.latency."):
		return "latency count, sum"
	}
	return name
}

// breakdown attributes the key-server memory of one host's series to the
// groups of seriesGroup: for each metric series of the host (pmseries'
// context.name index), the MEMORY USAGE of its values stream, descriptor,
// name and labels, and of its instances' keys (an instance series the
// host's metrics share counts once, for the first). What it leaves out (the
// maps and reverse indexes every host shares) is the rest of the total.
// pmseries 6.0.3's key schema: pcp:<what>:series:<hex id>.
func breakdown(rc *redisConn, host, prefix string) ([]part, error) {
	members := func(key string) ([]string, error) {
		v, err := rc.do("SMEMBERS", key)
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, x := range v.([]any) {
			ids = append(ids, hex.EncodeToString([]byte(x.(string))))
		}
		return ids, nil
	}
	usage := func(keys ...string) (int64, error) {
		var n int64
		for _, k := range keys {
			v, err := rc.do("MEMORY", "USAGE", k, "SAMPLES", "0")
			if err != nil {
				return 0, err
			}
			if b, ok := v.(int64); ok {
				n += b
			}
		}
		return n, nil
	}
	m, err := rc.do("HGETALL", "pcp:map:context.name")
	if err != nil {
		return nil, err
	}
	kv, _ := m.([]any)
	// The map names each source by its host name and by its archive's
	// path; the series are indexed under one of them.
	var series []string
	for i := 0; i+1 < len(kv) && len(series) == 0; i += 2 {
		if v, _ := kv[i+1].(string); v == host || strings.HasSuffix(v, "/"+host) {
			if series, err = members("pcp:series:context.name:" + hex.EncodeToString([]byte(kv[i].(string)))); err != nil {
				return nil, err
			}
		}
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("redis: no series for the context named %s", host)
	}
	parts := map[string]*part{}
	seen := map[string]bool{} // instance series a host's metrics share count once
	var order []string
	for _, sid := range series {
		ids, err := rc.do("SMEMBERS", "pcp:metric.name:series:"+sid)
		if err != nil {
			return nil, err
		}
		name := "?"
		if a := ids.([]any); len(a) > 0 {
			v, err := rc.do("HGET", "pcp:map:metric.name", a[0].(string))
			if err != nil {
				return nil, err
			}
			name, _ = v.(string)
		}
		g := seriesGroup(strings.TrimPrefix(name, prefix))
		p := parts[g]
		if p == nil {
			p = &part{Group: g}
			parts[g] = p
			order = append(order, g)
		}
		p.Series++
		b, err := usage("pcp:values:series:"+sid, "pcp:desc:series:"+sid, "pcp:metric.name:series:"+sid,
			"pcp:labelvalue:series:"+sid, "pcp:labelflags:series:"+sid, "pcp:instances:series:"+sid)
		if err != nil {
			return nil, err
		}
		p.Bytes += b
		insts, err := members("pcp:instances:series:" + sid)
		if err != nil {
			return nil, err
		}
		for _, iid := range insts {
			if seen[iid] {
				continue
			}
			seen[iid] = true
			p.Instances++
			b, err := usage("pcp:inst:series:"+iid, "pcp:labelvalue:series:"+iid, "pcp:labelflags:series:"+iid)
			if err != nil {
				return nil, err
			}
			p.Bytes += b
		}
	}
	out := make([]part, 0, len(order))
	for _, g := range order {
		out = append(out, *parts[g])
	}
	return out, nil
}
