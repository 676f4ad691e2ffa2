package e2e

// Consumers validating their position with OffsetForLeaderEpoch (KIP-320):
// the Java consumer and franz-go, on one gateway. The cluster tests
// (cluster_epochs_test.go) move leaders under a consumer.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Java consumer (e2e/java/src/TruncationCheck.java) seeks to offsets
// with a leader epoch: one inside the log is validated and consumed, one
// past its end is caught as truncation (LogTruncationException naming the
// log end as where it diverges, as a Kafka broker's answer makes it), and
// with auto.offset.reset the consumer resumes at the log end, not at the
// policy's offset. Without OffsetForLeaderEpoch the consumer skips
// validation and the position past the end is an out-of-range fetch.
func TestJavaConsumerValidatesPosition(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	src := javaSource(t, "java/src/TruncationCheck.java")
	out, errOut, err := javaRun(t, 150*time.Second, "", src, gw.Addr, "java-truncation")
	if err != nil {
		t.Fatalf("TruncationCheck: %v\nstdout: %s\nstderr: %s", err, out, tail(errOut, 30))
	}
	for _, want := range []string{
		"OK validated [3, 4] epoch 0\n",
		"OK truncation at 8 diverging at 5 epoch 0\n",
		"OK resumed at 5\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("TruncationCheck output lacks %q:\n%s\nstderr: %s", want, out, tail(errOut, 30))
		}
	}
}

// epochRequests counts the OffsetForLeaderEpoch responses a franz-go
// client read without error (a kgo.HookBrokerRead).
type epochRequests struct{ n atomic.Int64 }

func (h *epochRequests) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 23 && err == nil {
		h.n.Add(1)
	}
}

// franz-go validates an offset given with its leader epoch: inside the
// log it consumes from there; past the end it reports ErrDataLoss and
// resumes at the log end.
func TestKgoValidatesOffsetWithEpoch(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	const topic = "kgo-epochs"
	prod := filledTopic(t, gw.Addr, topic, 5)
	consumeFrom := func(at int64, hooks *epochRequests) *kgo.Client {
		return newClient(t, gw.Addr, kgo.WithHooks(hooks), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(at).WithEpoch(0)}}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var inside epochRequests
	cl := consumeFrom(3, &inside)
	var got []int64
	for len(got) < 2 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consuming from 3 in epoch 0: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Offset) })
	}
	if len(got) != 2 || got[0] != 3 || got[1] != 4 || inside.n.Load() == 0 {
		t.Fatalf("from 3: offsets %v, %d OffsetForLeaderEpoch answers", got, inside.n.Load())
	}

	var past epochRequests
	cl = consumeFrom(8, &past)
	var loss *kgo.ErrDataLoss
	for loss == nil && ctx.Err() == nil {
		cl.PollFetches(ctx).EachError(func(_ string, _ int32, err error) {
			if !errors.As(err, &loss) {
				t.Fatalf("from 8: %v, want data loss", err)
			}
		})
	}
	if loss == nil || loss.ConsumedTo != 8 || loss.ResetTo != 5 {
		t.Fatalf("from 8: %+v, want data loss from 8 to 5", loss)
	}
	produceAll(t, prod, valueRecords(topic, 1))
	var next *kgo.Record
	for next == nil && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("after the data loss: %v", err) })
		if rs := fs.Records(); len(rs) > 0 {
			next = rs[0]
		}
	}
	if next == nil || next.Offset != 5 || past.n.Load() == 0 {
		t.Fatalf("after the data loss: %+v, %d OffsetForLeaderEpoch answers", next, past.n.Load())
	}
}
