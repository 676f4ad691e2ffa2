package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumeOptions describes a consume workload: read Records records of
// Topic from the earliest offset.
type ConsumeOptions struct {
	Brokers             []string
	Dial                []kgo.Opt // as ProduceOptions.Dial
	Topic               string
	Records             int
	Group               string // consumer group; empty reads partitions directly
	FetchMaxBytes       int32  // kgo FetchMaxBytes; 0 keeps kgo's 50 MiB
	FetchMaxPartBytes   int32  // kgo FetchMaxPartitionBytes; 0 keeps kgo's 1 MiB
	MaxDuration         time.Duration
	Progress            io.Writer
	Label               string
	onRecord            func(*kgo.Record, time.Time) // e2e hook, called for every record
	clockFromFirstFetch bool
}

func (o *ConsumeOptions) defaults() {
	if o.Records <= 0 {
		o.Records = 100_000
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = time.Minute
	}
	if o.Label == "" {
		o.Label = "consume"
	}
}

// RunConsume reads Records records from the start of Topic and reports the
// rate. The clock starts when the first fetch returns records (as in the
// peer baseline: metadata, ListOffsets and the connection are not timed)
// and stops at the last record counted.
func RunConsume(ctx context.Context, o ConsumeOptions) (*Result, error) {
	o.defaults()
	o.clockFromFirstFetch = true
	return runConsume(ctx, o)
}

func runConsume(ctx context.Context, o ConsumeOptions) (*Result, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ClientID("iggy-kafka-bench"),
		kgo.ConsumeTopics(o.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if o.Group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.Group))
	}
	if o.FetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(o.FetchMaxBytes))
	}
	if o.FetchMaxPartBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(o.FetchMaxPartBytes))
	}
	cl, err := kgo.NewClient(append(opts, o.Dial...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	res := &Result{Workload: "consume", Records: int64(o.Records)}
	var got, bytes atomic.Int64
	rctx, cancel := context.WithTimeout(ctx, o.MaxDuration)
	defer cancel()
	prog := startProgress(o.Progress, o.Label, int64(o.Records), &got, &bytes)
	defer prog.stop()

	start := time.Now()
	first := true
	var fetchErr error
	for got.Load() < res.Records && rctx.Err() == nil {
		fs := cl.PollFetches(rctx)
		now := time.Now()
		if first && o.clockFromFirstFetch && fs.NumRecords() > 0 {
			start, first = now, false
		}
		fs.EachError(func(t string, p int32, err error) {
			if rctx.Err() == nil && fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			break
		}
		var n, b int64
		want := res.Records - got.Load()
		fs.EachRecord(func(r *kgo.Record) {
			if n == want {
				return // the topic holds more than asked for; count exactly Records
			}
			n++
			b += int64(len(r.Value))
			if o.onRecord != nil {
				o.onRecord(r, now)
			}
		})
		got.Add(n)
		bytes.Add(b)
	}
	elapsed := time.Since(start)
	prog.stop()
	res.Counted, res.Bytes = got.Load(), bytes.Load()
	if res.Counted > 0 {
		res.RecordSize = int(res.Bytes / res.Counted) // the mean: a warm-up record may differ
	}
	switch {
	case fetchErr != nil:
		res.Err = fetchErr.Error()
	case res.Counted < res.Records:
		res.Err = fmt.Sprintf("cut after %s with %d of %d records read", o.MaxDuration, res.Counted, res.Records)
	}
	res.finish(elapsed)
	return res, nil
}

// putStamp writes t (unix ns) into the first 8 bytes of v; getStamp reads
// it back. e2e values are at least 8 bytes.
func putStamp(v []byte, t time.Time) { binary.BigEndian.PutUint64(v, uint64(t.UnixNano())) }

func getStamp(v []byte) time.Time {
	if len(v) < 8 {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v)))
}
