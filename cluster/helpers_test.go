package cluster

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// startTestNode is startNode closed when the test ends.
func startTestNode(t *testing.T, endpoint, prefix string, id int32, more ...func(*Options)) *Node {
	t.Helper()
	n := startNode(t, endpoint, prefix, id, more...)
	t.Cleanup(n.Close)
	return n
}

// startNode starts member id on endpoint under prefix, with a 2s session
// TTL and up to 10s to register; more set further options. The caller
// closes it.
func startNode(t *testing.T, endpoint, prefix string, id int32, more ...func(*Options)) *Node {
	t.Helper()
	o := Options{Endpoints: []string{endpoint}, Prefix: prefix, Self: Member{ID: id}, TTL: 2 * time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, m := range more {
		m(&o)
	}
	n, err := Start(context.Background(), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mayWrite says whether a and b may each write partition p of topic "t"
// now; both are asked before either write ends.
func mayWrite(a, b *Node, p int32) (wa, wb bool) {
	wa, wb = a.BeginWrite("t", p), b.BeginWrite("t", p)
	if wa {
		a.EndWrite()
	}
	if wb {
		b.EndWrite()
	}
	return wa, wb
}
