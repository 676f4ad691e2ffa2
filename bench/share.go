package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareOptions describes a share-consume workload: Consumers franz-go
// share consumers in share group Group take the Records records already
// in Topic's Partitions partitions and accept every one.
type ShareOptions struct {
	Brokers     []string
	Dial        []kgo.Opt // as ProduceOptions.Dial
	Topic       string
	Group       string // default: "<Topic>-share"
	Records     int
	Partitions  int32
	Consumers   int
	MaxDuration time.Duration
	Progress    io.Writer
	Label       string
}

// RunShareConsume sets share.auto.offset.reset=earliest on the group (the
// default, latest, would skip the records already written), then starts
// the consumers and times them from their start (the clients are made,
// join the group, are assigned and fetch within the clock) until every
// record's offset was delivered and accepted.
//
// The acknowledgement is implicit, the default of franz-go and of Java's
// KafkaShareConsumer (share.acknowledgement.mode=implicit): each poll
// accepts what the previous one returned. When the last offset has been
// delivered, each consumer accepts its last poll's records the same way
// (MarkAcks) and FlushAcks waits for the broker's answers, so the clock
// stops only once the target has taken every acceptance. A record
// delivered again (its offset seen before: its lock expired or was
// released) counts in Duplicates, not in Counted; an acknowledgement the
// target refused makes the run incomplete.
func RunShareConsume(ctx context.Context, o ShareOptions) (*Result, error) {
	o.Consumers = max(o.Consumers, 1)
	o.Partitions = max(o.Partitions, 1)
	o.MaxDuration = cmp.Or(o.MaxDuration, time.Minute)
	o.Group = cmp.Or(o.Group, o.Topic+"-share")
	o.Label = cmp.Or(o.Label, "share")
	res := &Result{Workload: "share", Records: int64(o.Records)}
	rctx, cancel := context.WithTimeout(ctx, o.MaxDuration)
	defer cancel()
	if err := SetShareAutoOffsetReset(rctx, o.Brokers, o.Group, "earliest", o.Dial...); err != nil {
		return nil, err
	}

	seen := newOffsetSet(o.Partitions)
	var got, bytes, dups atomic.Int64
	var first atomic.Int64 // unix ns of the first records, 0 before
	var ackErrs atomic.Int64
	var firstAckErr atomic.Value
	onAck := func(_ *kgo.Client, rs kgo.ShareAckResults) {
		if err := rs.Error(); err != nil {
			ackErrs.Add(1)
			firstAckErr.CompareAndSwap(nil, err.Error())
		}
	}
	prog := startProgress(o.Progress, o.Label, int64(o.Records), &got, &bytes)
	defer prog.stop()

	start := time.Now()
	clients := make([]*kgo.Client, o.Consumers)
	defer closeClients(clients)
	for i := range clients {
		var err error
		clients[i], err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(o.Brokers...), kgo.ClientID("iggy-kafka-bench"),
			kgo.ShareGroup(o.Group), kgo.ConsumeTopics(o.Topic), kgo.ShareAckCallback(onAck)}, o.Dial...)...)
		if err != nil {
			return nil, err
		}
	}
	pctx, stopPolls := context.WithCancel(rctx)
	defer stopPolls()
	var mu sync.Mutex
	var fetchErr error
	keepErr := func(err error) { // the first error of any consumer
		mu.Lock()
		fetchErr = cmp.Or(fetchErr, err)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func(cl *kgo.Client) {
			defer wg.Done()
			for pctx.Err() == nil {
				fs := cl.PollFetches(pctx)
				if ferr := firstFetchError(pctx, fs); ferr != nil {
					keepErr(ferr)
					stopPolls()
					break
				}
				if fs.NumRecords() > 0 {
					first.CompareAndSwap(0, time.Now().UnixNano())
				}
				var n, d, b int64
				fs.EachPartition(func(p kgo.FetchTopicPartition) {
					if len(p.Records) == 0 {
						return // an error or an empty partition
					}
					fresh := seen.add(p.Partition, p.Records, func(r *kgo.Record) { b += int64(len(r.Value)) })
					n += int64(fresh)
					d += int64(len(p.Records) - fresh)
				})
				dups.Add(d)
				bytes.Add(b)
				if got.Add(n) >= res.Records {
					stopPolls() // every offset delivered: the others' polls end
				}
			}
			// The last poll's records: accepted as the next poll
			// would, and waited for.
			cl.MarkAcks(kgo.AckAccept)
			if err := cl.FlushAcks(rctx); err != nil {
				keepErr(fmt.Errorf("flushing acknowledgements: %w", err))
			}
		}(cl)
	}
	wg.Wait()
	elapsed := time.Since(start)
	prog.stop()
	res.Counted, res.Bytes, res.Duplicates = got.Load(), bytes.Load(), dups.Load()
	if f := first.Load(); f != 0 {
		res.FirstRecord = time.Unix(0, f).Sub(start).Seconds()
	}
	if res.Counted > 0 {
		res.RecordSize = int(res.Bytes / res.Counted)
	}
	switch {
	case fetchErr != nil:
		res.Err = fetchErr.Error()
	case ackErrs.Load() > 0:
		res.Err = fmt.Sprintf("%d acknowledgements refused, first: %v", ackErrs.Load(), firstAckErr.Load())
	case res.Counted < res.Records:
		res.Err = fmt.Sprintf("cut after %s with %d of %d records delivered", o.MaxDuration, res.Counted, res.Records)
	}
	res.finish(elapsed)
	return res, nil
}

// offsetSet is the offsets delivered so far, per partition; any
// goroutine.
type offsetSet struct {
	mu   sync.Mutex
	seen [][]bool // partition -> offset -> delivered
}

func newOffsetSet(partitions int32) *offsetSet {
	return &offsetSet{seen: make([][]bool, partitions)}
}

// add marks rs's offsets in partition p, calls fresh for each record
// whose offset is new and returns how many were.
func (s *offsetSet) add(p int32, rs []*kgo.Record, fresh func(*kgo.Record)) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(p) >= len(s.seen) {
		s.seen = append(s.seen, make([][]bool, int(p)+1-len(s.seen))...)
	}
	n := 0
	for _, r := range rs {
		seen := s.seen[p]
		if r.Offset >= int64(len(seen)) {
			seen = append(seen, make([]bool, r.Offset+1-int64(len(seen)))...)
			s.seen[p] = seen
		}
		if !seen[r.Offset] {
			seen[r.Offset] = true
			fresh(r)
			n++
		}
	}
	return n
}

// SetShareAutoOffsetReset sets the share group's share.auto.offset.reset
// (IncrementalAlterConfigs on the GROUP resource) and waits until
// DescribeConfigs shows it: Kafka applies a group config asynchronously
// after answering, and a member that joins before would start at the
// default, latest.
func SetShareAutoOffsetReset(ctx context.Context, brokers []string, group, value string, dial ...kgo.Opt) error {
	cl, err := adminClient(brokers, dial...)
	if err != nil {
		return err
	}
	defer cl.Close()
	const name = "share.auto.offset.reset"
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("set %s of group %s: %w", name, group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("set %s of group %s: %w", name, group, err)
		}
	}
	for {
		dreq := kmsg.NewPtrDescribeConfigsRequest()
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{name}
		dreq.Resources = append(dreq.Resources, dr)
		dresp, err := dreq.RequestWith(ctx, cl)
		if err == nil {
			for _, r := range dresp.Resources {
				for _, rc := range r.Configs {
					if rc.Name == name && rc.Value != nil && *rc.Value == value {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("group %s: %s=%s not applied: %w", group, name, value, ctx.Err()), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
