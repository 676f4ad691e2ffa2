package bench

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/iggy-kafka/gateway/internal/procfs"
)

// The idle workload (1000 idle connections, resident memory per
// connection reported; the target is under 64 KiB each) opens Records connections to the
// target, has each make one ApiVersions round trip (so every one is a
// served Kafka connection, past admission and, on gateway-tls, past its
// handshake), holds them all open, and reads the target's resident memory
// before and after. Records/s means nothing for it; it reports bytes of
// RSS per connection.

// idleSettle is how long the connections stay open before the second RSS
// reading, for the server to finish its per-connection setup.
const idleSettle = time.Second

// runIdle runs the idle workload against t. Any goroutine.
func runIdle(ctx context.Context, t Target, n int) (*Result, error) {
	pid := t.PID()
	r := &Result{Workload: "idle", Records: int64(n)}
	if pid <= 0 {
		// In this process (gateway-inproc, kfake with --inproc) the
		// target's memory is not separable from the harness's: nothing
		// to measure, which is not a failed run.
		r.Complete = true
		return r, nil
	}
	var cfg *tls.Config
	if tt, ok := t.(interface{ TLSClient() *tls.Config }); ok {
		cfg = tt.TLSClient()
	}
	before, err := procfs.RSS(pid)
	if err != nil {
		return nil, err
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	start := time.Now()
	addr := t.Brokers()[0]
	for i := 0; i < n; i++ {
		c, err := dialIdle(ctx, addr, cfg, int32(i))
		if err != nil {
			r.Err = fmt.Sprintf("connection %d of %d: %v", i+1, n, err)
			return r, nil
		}
		conns = append(conns, c)
		r.Counted++
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(idleSettle):
	}
	after, err := procfs.RSS(pid)
	if err != nil {
		return nil, err
	}
	r.Seconds = time.Since(start).Seconds()
	r.RSSPerConn = float64(after-before) / float64(n)
	r.Complete = true
	return r, nil
}

// dialIdle connects (over TLS when cfg is set) and makes one ApiVersions
// v0 round trip with correlation id corr.
func dialIdle(ctx context.Context, addr string, cfg *tls.Config, corr int32) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		cfg = cfg.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(c, cfg)
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c = tc
	}
	// size, api key 18, version 0, correlation id, null client id.
	req := make([]byte, 4, 14)
	binary.BigEndian.PutUint32(req, 10)
	req = binary.BigEndian.AppendUint16(req, 18)
	req = binary.BigEndian.AppendUint16(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(corr))
	req = binary.BigEndian.AppendUint16(req, 0xffff)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		_ = c.Close()
		return nil, err
	}
	var head [8]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		_ = c.Close()
		return nil, err
	}
	size := int64(binary.BigEndian.Uint32(head[:4]))
	if got := int32(binary.BigEndian.Uint32(head[4:])); got != corr || size < 4 || size > 1<<20 {
		_ = c.Close()
		return nil, fmt.Errorf("ApiVersions reply: correlation %d (want %d), size %d", got, corr, size)
	}
	if _, err := io.CopyN(io.Discard, c, size-4); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}
