package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestRun runs the service for 2s and reads its file with PCP's reader:
// every order is counted once over the instances, and the histogram's
// count agrees.
func TestRun(t *testing.T) {
	ms := pcptest.RunExample(t, run, 2*time.Second, "shop")
	sum := func(name string) (n int) {
		t.Helper()
		m := pcptest.Find(ms, "mmv.shop."+name)
		require.NotNil(t, m, "PCP does not show mmv.shop.%s", name)
		for _, in := range m.Instances {
			v, err := strconv.Atoi(in.Value)
			require.NoError(t, err, "%s[%s]", name, in.Name)
			n += v
		}
		return n
	}
	orders := sum("shop.orders")
	assert.Greater(t, orders, 10, "about 100 orders a second")
	assert.Equal(t, orders, sum("shop.checkout.duration.count"))
	assert.Equal(t, orders, sum("shop.checkout.duration.bucket"))
	assert.Zero(t, sum("shop.carts.open"))
	r := pcptest.Find(ms, "mmv.shop.shop.orders")
	v, _ := r.Instances[0].Label("service_name")
	assert.Equal(t, `"shop"`, v)
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
