package bench

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// E2EOptions describes an end-to-end latency workload: one producer at a
// fixed Rate and one consumer in this process, so both read one clock.
type E2EOptions struct {
	Produce ProduceOptions // Rate is required; RecordSize is at least 8 (the send time rides in the value)
	Group   string
}

// RunE2E produces at a fixed rate while a consumer reads the same topic,
// and records, per record, the time from its scheduled send to its receipt
// by the consumer (E2ELatency) as well as to its produce ack (Latency).
func RunE2E(ctx context.Context, o E2EOptions) (*Result, error) {
	p := o.Produce
	p.defaults()
	if p.Rate <= 0 {
		return nil, errors.New("e2e needs a target rate")
	}
	if p.RecordSize < 8 {
		p.RecordSize = 8
	}
	p.stampValues = true
	p.Warmup = false
	if p.CreateTopic {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := CreateTopic(cctx, p.Brokers, p.Topic, p.Partitions, p.Dial...)
		cancel()
		if err != nil {
			return nil, err
		}
		p.CreateTopic = false
	}
	e2e := newRecorder()
	type consumed struct {
		res *Result
		err error
	}
	done := make(chan consumed, 1)
	started := make(chan time.Time, 1)
	go func() {
		r, err := runConsume(ctx, ConsumeOptions{
			Brokers: p.Brokers, Dial: p.Dial, Topic: p.Topic, Records: p.Records, Group: o.Group,
			MaxDuration: p.MaxDuration + 10*time.Second,
			onRecord: func(r *kgo.Record, now time.Time) {
				if ts := getStamp(r.Value); !ts.IsZero() {
					e2e.record(now.Sub(ts))
				}
			},
		})
		done <- consumed{r, err}
	}()
	pres, _, err := runProduce(ctx, p, started)
	if err != nil {
		return nil, err
	}
	c := <-done
	if c.err != nil {
		return nil, c.err
	}
	pres.Workload = "e2e"
	pres.E2ELatency = e2e.summary()
	if c.res.Err != "" && pres.Err == "" {
		pres.Err = "consumer: " + c.res.Err
	}
	pres.Complete = pres.Complete && c.res.Complete
	return pres, nil
}
