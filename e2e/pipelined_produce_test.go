package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
)

// withMaxFrameSize sets the largest request, and with it the unread-bytes
// cap (four of them), as --max-frame-size does.
func withMaxFrameSize(n int32) gwOption {
	return func(h *handlers.Config, l *loop.Config) { h.MaxFrameSize, l.MaxFrameSize = n, n }
}

// A librdkafka producer with its defaults pipelines 1,000 records of 10 kB
// and 200 of 500 kB faster than the store takes them
// (e2e/python/pipelined_produce.py). A Kafka broker mutes such a channel
// and TCP slows the client; so must the gateway: no connection closed, no
// reconnect, every record stored once and in order. A gateway that read on
// while the connection was held would pass the unread-bytes cap (here 4
// MiB, the frame cap being 1 MiB) and close it.
func TestPipelinedLargeProduceNotDisconnected(t *testing.T) {
	t.Parallel()
	py := needPython(t, "confluent_kafka", "python3-confluent-kafka")
	gw := startGateway(t, withMaxFrameSize(1<<20))
	const records = 1200
	runClientCheck(t, py, "python/pipelined_produce.py", gw.Addr, "pipelined", "unused", []string{
		fmt.Sprintf("produced %d pipelined, no disconnect", records),
	})
	if log := gw.Log.String(); strings.Contains(log, "closing connection") {
		t.Errorf("the gateway closed a connection:\n%s", tail(log, 40))
	}
	got := consumeN(t, gw.Addr, "pipelined", records)
	if len(got) != records {
		t.Fatalf("read %d records, want %d", len(got), records)
	}
	for i, r := range got {
		if r.Offset != int64(i) || !strings.HasPrefix(r.Value, fmt.Sprintf("%06d", i)) {
			t.Fatalf("record %d: offset %d, value %.10q...", i, r.Offset, r.Value)
		}
	}
}
