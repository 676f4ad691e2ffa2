package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/procfs"
)

// Clients that send thousands of Fetches and never read the answers, each
// Fetch alone worth 1 MiB: the gateway binary's RSS stays under a bound
// computed from its flags (docs/CONFIG.md "Limits"), the stalled
// connections are closed once the write-stall timeout passes with nothing
// read, and the gateway keeps serving other clients. Runs on whichever
// backend the pass uses.
func TestNonReaderRSSBounded(t *testing.T) {
	// Serial: measures the gateway binary's RSS.
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read the gateway's RSS")
	}
	const (
		conns      = 4
		requests   = 3000
		frameSize  = 1 << 20
		buffered   = 2 << 20
		outbound   = 1 << 20
		inflight   = 64
		stallSecs  = 3
		recordSize = 16 << 10
	)
	p := spawnGateway(t, t.TempDir(),
		"--max-frame-size="+strconv.Itoa(frameSize),
		"--max-buffered-per-conn="+strconv.Itoa(buffered),
		"--max-outbound-per-conn="+strconv.Itoa(outbound),
		"--max-inflight-per-conn="+strconv.Itoa(inflight),
		"--write-stall-timeout-secs="+strconv.Itoa(stallSecs),
		"--store-cache-mb=8",
	)
	pid := p.cmd.Process.Pid

	// 4 MiB stored, so every Fetch from offset 0 finds a full 1 MiB.
	// Uncompressed, so each Fetch answer is as large as the test needs.
	cl := clientWithTopic(t, p.Addr, "nonreader", 1, kgo.ProducerBatchMaxBytes(512<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var recs []*kgo.Record
	for i := 0; i < 256; i++ {
		recs = append(recs, &kgo.Record{Topic: "nonreader", Value: bytes.Repeat([]byte{byte(i)}, recordSize)})
	}
	produceAll(t, cl, recs)

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MinBytes = 1
	req.MaxBytes = 1 << 30 // cut to --max-frame-size
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "nonreader"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 30
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	// Warm the pools and the cache with fetches that are read, then take
	// the baseline.
	w := dialWire(t, p.Addr)
	for i := int32(1); i <= 8; i++ {
		resp := w.roundTrip(req, 12, i).(*kmsg.FetchResponse)
		if n := len(resp.Topics[0].Partitions[0].RecordBatches); n < frameSize/2 {
			t.Fatalf("warm-up fetch returned %d bytes", n)
		}
	}
	base, err := procfs.RSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	// What docs/CONFIG.md says one connection can hold: unread requests
	// and request copies in flight (max-buffered-per-conn each, plus one
	// 256 KiB read), replies queued for writing (max-outbound-per-conn,
	// plus the one record the reply that crossed it may carry, plus a small
	// record-less answer per request in flight). Twice that for the Go
	// heap's growth before a collection (GOGC=100), and 64 MiB for what
	// a reply passes through on its way out and for the runtime.
	perConn := int64(2*buffered + 256<<10 + outbound + frameSize + inflight*1024)
	bound := base + 2*conns*perConn + 64<<20
	t.Logf("baseline RSS %d MiB; bound %d MiB (%d connections x %d MiB, doubled, + 64 MiB)", base>>20, bound>>20, conns, perConn>>20)

	var frames []byte
	for i := 0; i < requests; i++ {
		frames = append(frames, frameOf(req, 12, int32(i))...)
	}
	var mu sync.Mutex
	var raws []net.Conn
	var wg sync.WaitGroup
	// Registered first, so it runs after the connections' closes: a test
	// that fails early still waits for its writers, whose t.Logf must not
	// come after it ended.
	t.Cleanup(wg.Wait)
	for i := 0; i < conns; i++ {
		c, err := net.DialTimeout("tcp", p.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		raws = append(raws, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// All of it fits in the socket buffers and the inbound cap; the
			// gateway just stops decoding. A write error is the gateway
			// closing us, which the checks below judge.
			_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write(frames); err != nil {
				mu.Lock()
				t.Logf("writing requests: %v", err)
				mu.Unlock()
			}
		}()
	}

	// Sample RSS until the stall timeout has closed the connections and a
	// little longer (a measurement over a set time, not a wait for a
	// condition). Stop at once when over the bound: a gateway without the
	// cap grows by GiBs a second on a shared machine.
	peak := base
	deadline := time.Now().Add(stallSecs*time.Second + 2*time.Second)
	for time.Now().Before(deadline) {
		rss, err := procfs.RSS(pid)
		if err != nil {
			t.Fatalf("reading RSS: %v", err)
		}
		peak = max(peak, rss)
		if rss > bound {
			p.Kill()
			t.Fatalf("gateway RSS %d MiB over the bound %d MiB (baseline %d MiB)", rss>>20, bound>>20, base>>20)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("peak RSS %d MiB (+%d MiB over the baseline)", peak>>20, (peak-base)>>20)

	// Each stalled connection was closed: reading what was queued ends in
	// EOF or a reset, not a timeout.
	for i, c := range raws {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := io.Copy(io.Discard, c)
		if err != nil && !errClosed(err) {
			t.Fatalf("connection %d: read %d bytes, then %v; want the gateway to have closed it", i, n, err)
		}
		if n >= int64(requests)*frameSize/2 {
			t.Fatalf("connection %d: %d bytes were queued for a client that read nothing", i, n)
		}
	}
	if log := p.Log(); !strings.Contains(log, "reason=write_stall") || !strings.Contains(log, "stopped reading its replies") {
		t.Fatalf("no write_stall close in the gateway log:\n%s", tail(log, 40))
	}

	// Other clients are served throughout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "nonreader", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the stalled clients: %v", err)
	}
	p.Stop()
}
