package fleet

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// redisConn is the least of a Redis client the fleet measurements need:
// commands sent as RESP arrays, replies parsed into strings, integers and
// arrays (redis-server's INFO, DBSIZE, SCAN and TYPE).
type redisConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRedis(port int) (*redisConn, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &redisConn{c: c, r: bufio.NewReader(c)}, nil
}

func (rc *redisConn) Close() error { return rc.c.Close() }

// do sends a command and returns its reply: a string, an int64, a []any,
// or nil for a null; an error reply is returned as an error.
func (rc *redisConn) do(args ...string) (any, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	rc.c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := rc.c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return rc.reply()
}

func (rc *redisConn) reply() (any, error) {
	line, err := rc.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("redis: empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, fmt.Errorf("redis: %s", line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rc.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = rc.reply(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redis: unexpected reply %q", line)
}

// info returns the fields of an INFO section, such as "memory".
func (rc *redisConn) info(section string) (map[string]string, error) {
	v, err := rc.do("INFO", section)
	if err != nil {
		return nil, err
	}
	s, _ := v.(string)
	m := map[string]string{}
	for l := range strings.Lines(s) {
		if k, val, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			m[k] = val
		}
	}
	return m, nil
}

// infoInt returns one integer field of an INFO section.
func (rc *redisConn) infoInt(section, field string) (int64, error) {
	m, err := rc.info(section)
	if err != nil {
		return 0, err
	}
	v, ok := m[field]
	if !ok {
		return 0, fmt.Errorf("redis INFO %s: no %s", section, field)
	}
	return strconv.ParseInt(v, 10, 64)
}

// keys returns every key matching pattern, by SCAN.
func (rc *redisConn) keys(pattern string) ([]string, error) {
	var out []string
	cursor := "0"
	for {
		v, err := rc.do("SCAN", cursor, "MATCH", pattern, "COUNT", "10000")
		if err != nil {
			return nil, err
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			return nil, fmt.Errorf("redis SCAN: unexpected reply %v", v)
		}
		cursor, _ = a[0].(string)
		ks, _ := a[1].([]any)
		for _, k := range ks {
			out = append(out, k.(string))
		}
		if cursor == "0" {
			return out, nil
		}
	}
}
