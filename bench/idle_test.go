package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The idle workload holds its connections open on the gateway binary over
// PLAINTEXT and over TLS (each past one ApiVersions), reports resident
// memory per connection, and reports nothing, without failing, for a
// target in this process.
func TestIdleWorkload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ws := []Workload{{Name: "idle-300", Kind: "idle", Records: 300}}
	c, err := Compare(ctx, CompareOptions{Targets: []string{"gateway", "gateway-tls", "gateway-inproc"}, Workloads: ws, Reps: 1,
		MaxDuration: 30 * time.Second, Target: TargetConfig{ModuleDir: "..", WorkDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Incomplete(); n > 0 {
		t.Fatalf("%d incomplete runs: %+v", n, c.Runs[0])
	}
	for _, name := range []string{"gateway", "gateway-tls"} {
		r := c.row("idle-300", name)
		if r == nil || r.RSSPerConn <= 0 || r.RSSPerConn > 1<<20 {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	if r := c.row("idle-300", "gateway-inproc"); r == nil || r.RSSPerConn != 0 {
		t.Fatalf("in-process target: %+v", r)
	}
	md := c.Markdown()
	if !strings.Contains(md, "| idle-300 | gateway-tls | 1/1 | 300 |") || !strings.Contains(md, "RSS per connection") {
		t.Fatalf("markdown:\n%s", md)
	}
}
