package bench

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
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
	Topics              int    // > 1: read topicNames(Topic, Topics)
	Partitions          int32  // partitions per topic; needed with Consumers > 1
	Consumers           int    // > 1: this many clients, client i assigned partitions p % Consumers == i
	Group               string // consumer group; empty reads partitions directly
	FetchMaxBytes       int32  // kgo FetchMaxBytes; 0 keeps kgo's 50 MiB
	FetchMaxPartBytes   int32  // kgo FetchMaxPartitionBytes; 0 keeps kgo's 1 MiB
	ReadCommitted       bool   // isolation level read_committed (kgo's default is read_uncommitted)
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
	if o.Consumers > 1 {
		return runConsumers(ctx, o)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ClientID("iggy-kafka-bench"),
		kgo.ConsumeTopics(topicNames(o.Topic, o.Topics)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if o.Group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.Group))
	}
	cl, err := kgo.NewClient(o.clientOpts(opts)...)
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
		if fetchErr = firstFetchError(rctx, fs); fetchErr != nil {
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

// runConsumers is runConsume with o.Consumers clients at once, client i
// assigned partition p of every topic when p % Consumers == i, all
// counting into one total; the clock runs from the first records any
// client got to the last one counted.
func runConsumers(ctx context.Context, o ConsumeOptions) (*Result, error) {
	names := topicNames(o.Topic, o.Topics)
	clients := make([]*kgo.Client, o.Consumers)
	defer closeClients(clients)
	for i := range clients {
		assign := make(map[string]map[int32]kgo.Offset, len(names))
		for _, tn := range names {
			ps := map[int32]kgo.Offset{}
			for p := int32(i); p < max(o.Partitions, 1); p += int32(o.Consumers) {
				ps[p] = kgo.NewOffset().AtStart()
			}
			if len(ps) > 0 {
				assign[tn] = ps
			}
		}
		if len(assign) == 0 {
			continue // more consumers than partitions: this one idles
		}
		opts := []kgo.Opt{kgo.SeedBrokers(o.Brokers...), kgo.ClientID("iggy-kafka-bench"), kgo.ConsumePartitions(assign)}
		var err error
		if clients[i], err = kgo.NewClient(o.clientOpts(opts)...); err != nil {
			return nil, err
		}
	}

	res := &Result{Workload: "consume", Records: int64(o.Records)}
	var got, bytes atomic.Int64
	var first atomic.Int64 // unix ns of the first records, 0 before
	rctx, cancel := context.WithTimeout(ctx, o.MaxDuration)
	defer cancel()
	prog := startProgress(o.Progress, o.Label, int64(o.Records), &got, &bytes)
	defer prog.stop()
	var mu sync.Mutex
	var fetchErr error
	var wg sync.WaitGroup
	for _, cl := range clients {
		if cl == nil {
			continue
		}
		wg.Add(1)
		go func(cl *kgo.Client) {
			defer wg.Done()
			for got.Load() < res.Records && rctx.Err() == nil {
				fs := cl.PollFetches(rctx)
				if fs.NumRecords() > 0 {
					first.CompareAndSwap(0, time.Now().UnixNano())
				}
				if ferr := firstFetchError(rctx, fs); ferr != nil {
					mu.Lock()
					fetchErr = cmp.Or(fetchErr, ferr)
					mu.Unlock()
					cancel()
					return
				}
				var b int64
				fs.EachRecord(func(r *kgo.Record) { b += int64(len(r.Value)) })
				bytes.Add(b)
				got.Add(int64(fs.NumRecords()))
			}
			cancel() // the total is reached: stop the others' polls
		}(cl)
	}
	wg.Wait()
	end := time.Now()
	prog.stop()
	start := end
	if f := first.Load(); f != 0 {
		start = time.Unix(0, f)
	}
	res.Counted, res.Bytes = min(got.Load(), res.Records), bytes.Load()
	if n := got.Load(); n > 0 {
		res.RecordSize = int(res.Bytes / n)
	}
	switch {
	case fetchErr != nil:
		res.Err = fetchErr.Error()
	case res.Counted < res.Records:
		res.Err = fmt.Sprintf("cut after %s with %d of %d records read", o.MaxDuration, res.Counted, res.Records)
	}
	res.finish(end.Sub(start))
	return res, nil
}

// clientOpts are opts, then the fetch sizes and isolation level asked for
// and Dial.
func (o *ConsumeOptions) clientOpts(opts []kgo.Opt) []kgo.Opt {
	if o.FetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(o.FetchMaxBytes))
	}
	if o.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if o.FetchMaxPartBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(o.FetchMaxPartBytes))
	}
	return append(opts, o.Dial...)
}

// firstFetchError is the first partition error of fs; none once ctx is
// done (a poll cut by the deadline or by cancel is not an error).
func firstFetchError(ctx context.Context, fs kgo.Fetches) error {
	var first error
	fs.EachError(func(t string, p int32, err error) {
		if ctx.Err() == nil && first == nil {
			first = fmt.Errorf("fetch %s/%d: %w", t, p, err)
		}
	})
	return first
}

// closeClients closes the clients made so far (nil: not made).
func closeClients(clients []*kgo.Client) {
	for _, cl := range clients {
		if cl != nil {
			cl.Close()
		}
	}
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
