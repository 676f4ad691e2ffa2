package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceOptions describes a produce workload. Zero values take the
// defaults in (*ProduceOptions).defaults.
type ProduceOptions struct {
	Brokers     []string
	Dial        []kgo.Opt // how to reach Brokers beyond their addresses (the gateway-tls target's TLS)
	Topic       string
	Records     int           // records in the timed run, over all producers
	RecordSize  int           // value bytes per record; no key, no headers
	Producers   int           // kgo clients, each producing Records/Producers
	Partitions  int32         // partitions of the topic if it is created
	Topics      int           // > 1: records go round-robin to topicNames(Topic, Topics)
	CreateTopic bool          // create Topic first (otherwise it must exist or be auto-created)
	Acks        string        // all (-1, the default), leader (1) or none (0)
	Compression string        // none, snappy, lz4, zstd, gzip
	Linger      time.Duration // kgo ProducerLinger; 0 keeps kgo's 10ms, negative is no linger
	Inflight    int           // produce requests in flight per broker without idempotence; default 5 (kgo's idempotent limit)
	BatchBytes  int32         // kgo ProducerBatchMaxBytes
	MaxBuffered int           // kgo MaxBufferedRecords per producer
	Idempotent  bool          // kgo's default; needs Acks -1
	// TxnEvery > 0 makes every producer transactional (a transactional id
	// of its own, TxnIDPrefix-<topic>-<i>) and commits after each
	// TxnEvery of its records: BeginTransaction, the records, Flush,
	// EndTransaction(TryCommit), one transaction at a time, as a
	// transactional client must. Needs Idempotent.
	TxnEvery    int
	Rate        float64       // records/s over all producers; 0 is as fast as possible
	MaxDuration time.Duration // the run is cut (and reported incomplete) after this
	Warmup      bool          // one synchronous record per producer before the clock starts
	Progress    io.Writer     // progress lines; nil for none
	Label       string        // progress label
	// stampValues writes the scheduled send time into the first 8 bytes of
	// each value (RunE2E); it costs a copy per record.
	stampValues bool
}

func (o *ProduceOptions) defaults() {
	if o.Records <= 0 {
		o.Records = 100_000
	}
	if o.RecordSize <= 0 {
		o.RecordSize = 100
	}
	if o.Producers <= 0 {
		o.Producers = 1
	}
	if o.Partitions <= 0 {
		o.Partitions = 1
	}
	if o.Acks == "" {
		o.Acks = "all"
	}
	if o.Inflight <= 0 {
		o.Inflight = 5
	}
	if o.Compression == "" {
		o.Compression = "none"
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = time.Minute
	}
	if o.Label == "" {
		o.Label = "produce"
	}
}

// Codec maps a compression name to kgo's codec.
func Codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown compression %q (none, snappy, lz4, zstd, gzip)", name)
}

func (o *ProduceOptions) clientOpts() ([]kgo.Opt, error) {
	codec, err := Codec(o.Compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ClientID("iggy-kafka-bench"),
		kgo.DefaultProduceTopic(topicNames(o.Topic, o.Topics)[0]),
		kgo.ProducerBatchCompression(codec),
		kgo.ProduceRequestTimeout(30 * time.Second),
	}
	switch o.Acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "leader", "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "none", "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, fmt.Errorf("acks %q: want all (-1), leader (1) or none (0)", o.Acks)
	}
	if !o.Idempotent {
		if o.TxnEvery > 0 {
			return nil, errors.New("a transactional producer is idempotent")
		}
		opts = append(opts, kgo.DisableIdempotentWrite())
	} else if o.Acks != "all" && o.Acks != "-1" {
		return nil, errors.New("an idempotent producer needs acks all")
	}
	if !o.Idempotent {
		// kgo allows one request in flight without idempotence unless
		// told otherwise, which would make "idempotence off" a test of
		// round trips; 5 is what it allows with idempotence on.
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(max(o.Inflight, 1)))
	}
	if o.Linger > 0 {
		opts = append(opts, kgo.ProducerLinger(o.Linger))
	} else if o.Linger < 0 {
		opts = append(opts, kgo.ProducerLinger(0))
	}
	if o.BatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(o.BatchBytes))
	}
	if o.MaxBuffered > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(o.MaxBuffered))
	}
	return append(opts, o.Dial...), nil
}

// Result is what one workload run measured.
type Result struct {
	Target     string   `json:"target,omitempty"`
	Workload   string   `json:"workload"`
	RecordSize int      `json:"record_size"`
	Records    int64    `json:"records"` // records asked for
	Counted    int64    `json:"counted"` // records acknowledged (produce) or received (consume)
	Errors     int64    `json:"errors"`  // records whose produce failed
	Bytes      int64    `json:"bytes"`   // value bytes counted
	Seconds    float64  `json:"seconds"` // timed part of the run
	RecPerSec  float64  `json:"records_per_sec"`
	MBPerSec   float64  `json:"mb_per_sec"` // 10^6 bytes of record values per second
	Rate       float64  `json:"target_rate,omitempty"`
	Latency    *Latency `json:"latency,omitempty"` // produce: send (or scheduled send) to ack
	// PacedMBPerSec (iggy-native-paced) is the rate iggy-bench was held to:
	// the iggy target's on the same workload just before.
	PacedMBPerSec float64  `json:"paced_mb_per_sec,omitempty"`
	E2ELatency    *Latency `json:"e2e_latency,omitempty"` // e2e: scheduled send to receipt
	ServerCPU     float64  `json:"server_cpu_s,omitempty"`
	ClientCPU     float64  `json:"client_cpu_s,omitempty"`
	// GatewayCPU is the gateway's part of ServerCPU when the target runs
	// more than one process (iggy: the gateway and its Iggy server).
	GatewayCPU float64 `json:"gateway_cpu_s,omitempty"`
	// IggyServerCPU is the part of ServerCPU spent by an iggy-server the
	// target started (iggy: the one behind the gateway; iggy-native: all).
	IggyServerCPU float64 `json:"iggy_server_cpu_s,omitempty"`
	// AfterCPU is the part of ServerCPU the target's processes spent after
	// the step had ended (Iggy saving in the background), counted until
	// they were quiet again, SettleSeconds after the end; Unsettled: they
	// were not quiet within the bound, and the CPU was read there.
	AfterCPU      float64 `json:"after_step_cpu_s,omitempty"`
	SettleSeconds float64 `json:"settle_s,omitempty"`
	Unsettled     bool    `json:"unsettled,omitempty"`
	// RSSPerConn is the idle workload's growth of the target's resident
	// memory per open connection, in bytes.
	RSSPerConn float64 `json:"rss_per_conn_bytes,omitempty"`
	Complete   bool    `json:"complete"` // every record counted, no error, within the bounds
	Err        string  `json:"error,omitempty"`
	// ToolLine is the summary a perf tool printed (perf-produce,
	// perf-consume), as printed: its MB are MiB and its rates its own
	// timing; the fields above are read from it.
	ToolLine string `json:"tool_line,omitempty"`
	// Duplicates (share) are deliveries of an offset already delivered
	// (its acquisition lock ran out, or it was released); not in Counted.
	Duplicates int64 `json:"duplicates,omitempty"`
	// FirstRecord (share) is the seconds from the consumers' start to
	// the first record delivered: joining the group and being assigned.
	FirstRecord float64 `json:"first_record_s,omitempty"`
}

func (r *Result) finish(elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.RecPerSec = float64(r.Counted) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / r.Seconds / 1e6
	}
	r.Complete = r.Counted == r.Records && r.Errors == 0 && r.Err == ""
}

// timedRecord is a record plus the time it was (or was scheduled to be)
// sent. kgo truncates Record.Timestamp to milliseconds, too coarse for
// latency, and a closure per promise would allocate, so the start time
// rides beside the record and the promise finds it from the record
// pointer.
type timedRecord struct {
	rec   kgo.Record // first field: (*timedRecord)(unsafe.Pointer(r)) recovers the outer struct
	start time.Time
}

func outer(r *kgo.Record) *timedRecord { return (*timedRecord)(unsafe.Pointer(r)) }

// RunProduce runs a produce workload and returns what it measured. A run
// cut by MaxDuration or by errors returns a Result with Complete false and
// Err set, not an error; an error means the run could not start.
func RunProduce(ctx context.Context, o ProduceOptions) (*Result, error) {
	o.defaults()
	res, _, err := runProduce(ctx, o, nil)
	return res, err
}

// runProduce is RunProduce with a hook that e2e uses to learn when the
// producers started.
func runProduce(ctx context.Context, o ProduceOptions, started chan<- time.Time) (*Result, *recorder, error) {
	copts, err := o.clientOpts()
	if err != nil {
		return nil, nil, err
	}
	names := topicNames(o.Topic, o.Topics)
	if o.CreateTopic {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second+time.Duration(len(names))*time.Second)
		for _, tn := range names {
			if err = CreateTopic(cctx, o.Brokers, tn, o.Partitions, o.Dial...); err != nil {
				break
			}
		}
		cancel()
		if err != nil {
			return nil, nil, err
		}
	}
	clients := make([]*kgo.Client, o.Producers)
	defer closeClients(clients)
	for i := range clients {
		opts := copts
		if o.TxnEvery > 0 {
			opts = append(slices.Clip(copts), kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", TxnIDPrefix, o.Topic, i)))
		}
		if clients[i], err = kgo.NewClient(opts...); err != nil {
			return nil, nil, err
		}
	}
	if o.Warmup {
		// A transactional producer's warm-up record is a transaction of
		// its own: InitProducerId and the coordinator lookup are not timed.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		for _, cl := range clients {
			err := o.beginTxn(cl)
			if err == nil {
				err = cl.ProduceSync(wctx, &kgo.Record{Value: []byte("warmup")}).FirstErr()
			}
			if err == nil {
				err = o.commitTxn(wctx, cl)
			}
			if err != nil {
				cancel()
				return nil, nil, fmt.Errorf("warm-up record: %w", err)
			}
		}
		cancel()
	}

	res := &Result{Workload: "produce", RecordSize: o.RecordSize, Records: int64(o.Records), Rate: o.Rate}
	lat := newRecorder()
	var acked, failed, bytes atomic.Int64
	var firstErr atomic.Pointer[error]
	pool := sync.Pool{New: func() any { return new(timedRecord) }}
	promise := func(r *kgo.Record, err error) {
		tr := outer(r)
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, &err)
		} else {
			lat.record(time.Since(tr.start))
			acked.Add(1)
			bytes.Add(int64(len(r.Value)))
		}
		if !o.stampValues {
			*tr = timedRecord{}
			pool.Put(tr)
		}
	}

	rctx, cancel := context.WithTimeout(ctx, o.MaxDuration)
	defer cancel()
	prog := startProgress(o.Progress, o.Label, int64(o.Records), &acked, &bytes)
	defer prog.stop()

	start := time.Now()
	if started != nil {
		started <- start
	}
	var wg sync.WaitGroup
	per := o.Records / o.Producers
	for i, cl := range clients {
		n := per
		if i == 0 {
			n += o.Records - per*o.Producers
		}
		wg.Add(1)
		go func(i int, cl *kgo.Client, n int) {
			defer wg.Done()
			payload := newPayloadPool(o.RecordSize, uint64(i+1))
			var interval time.Duration // between this producer's records
			if o.Rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(o.Producers) / o.Rate)
			}
			txnFail := func(err error) {
				firstErr.CompareAndSwap(nil, &err)
			}
			for j := 0; j < n; j++ {
				if rctx.Err() != nil {
					return
				}
				if o.TxnEvery > 0 && j%o.TxnEvery == 0 {
					if j > 0 {
						if err := o.commitTxn(rctx, cl); err != nil {
							txnFail(err)
							return
						}
					}
					if err := o.beginTxn(cl); err != nil {
						txnFail(err)
						return
					}
				}
				tr := pool.Get().(*timedRecord)
				if interval > 0 {
					// Latency counts from the scheduled send time, so a
					// target that falls behind pays for the queue it
					// causes (no coordinated omission).
					tr.start = start.Add(time.Duration(j) * interval)
					if d := time.Until(tr.start); d > 0 {
						time.Sleep(d)
					}
				} else {
					tr.start = time.Now()
				}
				if o.stampValues {
					v := make([]byte, o.RecordSize)
					copy(v, payload.value(j))
					putStamp(v, tr.start)
					tr.rec.Value = v
				} else {
					tr.rec.Value = payload.value(j)
				}
				if len(names) > 1 {
					tr.rec.Topic = names[(i+j)%len(names)]
				}
				cl.Produce(rctx, &tr.rec, promise)
			}
			if o.TxnEvery > 0 && n > 0 {
				if err := o.commitTxn(rctx, cl); err != nil {
					txnFail(err)
				}
			}
		}(i, cl, n)
	}
	wg.Wait()
	for _, cl := range clients {
		if err := cl.Flush(rctx); err != nil {
			break
		}
	}
	elapsed := time.Since(start)
	prog.stop()

	res.Counted, res.Errors, res.Bytes = acked.Load(), failed.Load(), bytes.Load()
	if p := firstErr.Load(); p != nil {
		res.Err = (*p).Error()
	} else if rctx.Err() != nil && res.Counted < res.Records {
		res.Err = fmt.Sprintf("cut after %s with %d of %d records acknowledged", o.MaxDuration, res.Counted, res.Records)
	}
	res.Latency = lat.summary()
	res.finish(elapsed)
	return res, lat, nil
}

// TxnIDPrefix starts the transactional ids of the harness's producers.
const TxnIDPrefix = "iggy-kafka-bench"

// beginTxn starts a transaction on a transactional producer (TxnEvery >
// 0); nothing otherwise.
func (o *ProduceOptions) beginTxn(cl *kgo.Client) error {
	if o.TxnEvery <= 0 {
		return nil
	}
	return cl.BeginTransaction()
}

// commitTxn flushes a transactional producer's records and commits its
// transaction (kgo's EndTransaction does not flush); nothing otherwise.
func (o *ProduceOptions) commitTxn(ctx context.Context, cl *kgo.Client) error {
	if o.TxnEvery <= 0 {
		return nil
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Markers is how many control records (commit markers) a run of o leaves
// in its topics besides its records: one per transaction on every
// partition it wrote to, the warm-up's included. Kafka gives each marker
// an offset, so the high watermark counts them. Which partitions a
// transaction touches is the partitioner's choice: lo is one partition
// per transaction, hi all of them; with one partition they are equal.
func (o *ProduceOptions) Markers() (lo, hi int64) {
	if o.TxnEvery <= 0 {
		return 0, 0
	}
	producers := max(o.Producers, 1)
	per := o.Records / producers
	for i := 0; i < producers; i++ {
		n := per
		if i == 0 {
			n += o.Records - per*producers
		}
		lo += int64((n + o.TxnEvery - 1) / o.TxnEvery)
		if o.Warmup {
			lo++
		}
	}
	return lo, lo * int64(max(o.Partitions, 1)) * int64(max(o.Topics, 1))
}

// topicNames is the topics of a workload over n topics: base alone for n
// <= 1, else base-000, base-001, ...
func topicNames(base string, n int) []string {
	if n <= 1 {
		return []string{base}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", base, i)
	}
	return out
}
