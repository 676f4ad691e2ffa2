package handlers

import (
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/bridge"
)

// The concurrent Fetch path. Over a remote store (Iggy) a Fetch is a chain
// of round trips: the topic, each partition's state, each partition's
// poll. Done one after another they add up (measured over a real Iggy
// server on the 2-core bench machine: ~0.8 ms topic, ~0.5 ms state, ~4 ms
// poll of 1 MiB, per partition), and the client waits for all of them
// before it sends the next Fetch. Here every lookup and every poll of the
// request starts at once, at most Cfg.FetchConcurrency at a time, and the
// answers are put together in request order afterwards.
//
// It is used only when the outcome cannot depend on order: every
// partition's budget is its own partition_max_bytes, so they must fit the
// response's max_bytes together (fetchBudgetsFit); otherwise the
// sequential path runs, where each partition gets what the ones before it
// left. Since a poll may start before the partition's state is read, a
// poll can find records the state did not know yet: the high watermark
// answered is then one past the last record returned (it is at least that
// by the time the reply leaves).

// fetchPart is one requested partition on the concurrent path. Each task
// writes only its own fields; assembly reads them after every task ended.
type fetchPart struct {
	t, p      int // indexes into the request's topics and partitions
	topic     string
	partition int32
	offset    int64
	pmax      int
	// notLeader: another gateway leads the partition (cluster mode),
	// decided once before any read; answered NOT_LEADER_OR_FOLLOWER.
	notLeader bool

	stateErr error
	state    bridge.PartitionState

	buf *bytebufferpool.ByteBuffer // own buffer: polls run at once
	n   int                        // Kafka bytes appended to buf, or in direct
	// cached: the tail cache answered, for the topic life ident, which
	// assembly checks against the lookup's; the data is in direct when
	// it is one run of the cache's bytes, else copied into buf.
	cached bool
	direct []byte
	refs   tailRefs // the chunks direct points into
	ident  tailIdentity
	next   uint64 // one past the last offset returned
	over   bool   // the data goes over pmax (KIP-74 first record)
	code   int16  // the poll's error code when n == 0
}

// fetchBudgetsFit reports whether the partitions' budgets, each at most
// limit, fit limit together, so polling them at once returns what the
// sequential path would.
func fetchBudgetsFit(req *kmsg.FetchRequest, limit int) bool {
	sum := 0
	for i := range req.Topics {
		for _, rp := range req.Topics[i].Partitions {
			sum += min(max(int(rp.PartitionMaxBytes), 0), limit)
			if sum > limit {
				return false
			}
		}
	}
	return true
}

// fetchConcurrently fills resp's partitions (already defaulted by the
// caller) and returns the Kafka bytes returned, whether any partition
// failed, and the buffers the response points into (the caller releases
// them after encoding). Worker goroutine only; it starts and waits for its
// own goroutines.
func (c *Call) fetchConcurrently(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, limit int) (total int, anyErr bool, bufs []*bytebufferpool.ByteBuffer, held []tailRefs) {
	g := c.G
	// A store that reads a topic and all its partitions' states in one
	// call (Iggy: one GetTopic) is asked once per topic instead of once
	// for the topic and once per partition.
	batched := g.Store.Capabilities().TopicStateInOneCall
	topics := make([]fetchTopic, len(req.Topics))
	var parts []*fetchPart
	var tasks []func()
	for i := range req.Topics {
		rt := &req.Topics[i]
		if batched {
			tasks = append(tasks, func() { topics[i] = c.fetchTopicState(rt.Topic) })
		} else {
			tasks = append(tasks, func() { topics[i].ti, topics[i].code = c.authorizedTopic(rt.Topic, kmsg.ACLOperationRead, opRead) })
		}
		if !validTopicName(rt.Topic) {
			continue
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.Partition < 0 || rp.FetchOffset < 0 {
				continue // answered from the topic lookup alone
			}
			fp := &fetchPart{t: i, p: j, topic: rt.Topic, partition: rp.Partition, offset: rp.FetchOffset,
				pmax: min(max(int(rp.PartitionMaxBytes), 0), limit)}
			parts = append(parts, fp)
			if !g.Cfg.Cluster.Leads(rt.Topic, rp.Partition) {
				fp.notLeader = true // nothing to read for it
				continue
			}
			if !batched {
				tasks = append(tasks, func() { fp.state, fp.stateErr = g.Store.Partition(c.Ctx, g.Cfg.Stream, fp.topic, fp.partition) })
			}
			tasks = append(tasks, func() { c.pollPart(fp) })
		}
	}
	runBounded(tasks, g.Cfg.FetchConcurrency)
	if batched {
		for _, fp := range parts {
			fp.state, fp.stateErr = topics[fp.t].partState(fp.partition)
		}
	}

	k := 0
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			sp := &resp.Topics[i].Partitions[j]
			var fp *fetchPart
			if k < len(parts) && parts[k].t == i && parts[k].p == j {
				fp = parts[k]
				k++
			}
			n, code := c.assemblePart(sp, &req.Topics[i].Partitions[j], topics[i].ti, topics[i].code, fp, total, limit)
			switch {
			case n > 0 && fp.direct != nil:
				sp.RecordBatches = fp.direct
				held = append(held, fp.refs)
				fp.refs.n = 0
				total += n
			case n > 0:
				sp.RecordBatches = fp.buf.B[:n:n]
				bufs = append(bufs, fp.buf)
				fp.buf = nil
				total += n
			}
			if code != 0 {
				anyErr = true
				sp.ErrorCode = code
			}
		}
	}
	for _, fp := range parts {
		putBig(fp.buf) // the ones not answered
		c.G.tail.release(&fp.refs)
	}
	return total, anyErr, bufs, held
}

// fetchTopic is a Fetch's lookup of one topic: the topic, its error code,
// and, from Store.TopicState, its partitions' states.
type fetchTopic struct {
	ti       bridge.TopicInfo
	code     int16
	states   []bridge.PartitionState
	stateErr error // the lookup's error when code != 0
}

// fetchTopicState is authorizedTopic reading the partitions' states in the
// same store call. Any goroutine.
func (c *Call) fetchTopicState(name string) fetchTopic {
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, name) {
		return fetchTopic{code: kerr.TopicAuthorizationFailed.Code}
	}
	if !validTopicName(name) {
		return fetchTopic{code: kerr.UnknownTopicOrPartition.Code}
	}
	ti, states, err := c.G.Store.TopicState(c.Ctx, c.G.Cfg.Stream, name)
	if err != nil {
		return fetchTopic{code: errCode(err, opRead), stateErr: err}
	}
	return fetchTopic{ti: ti, states: states}
}

// partState is partition p's state from the topic's lookup.
func (ft *fetchTopic) partState(p int32) (bridge.PartitionState, error) {
	switch {
	case ft.stateErr != nil:
		return bridge.PartitionState{}, ft.stateErr
	case p >= 0 && int(p) < len(ft.states):
		return ft.states[p], nil
	}
	return bridge.PartitionState{}, bridge.ErrPartitionNotFound
}

// pollPart polls one partition into its own buffer, as the first partition
// of a sequential Fetch would (KIP-74: at least one record); assembly drops
// data that went over when it is not first.
func (c *Call) pollPart(fp *fetchPart) {
	// The topic's identity and state are read at the same time as this
	// runs: any cached life of the topic is taken here, and assembly
	// checks it against the lookup's. Cached batches were acknowledged
	// by the store, so they are below its high watermark.
	key := PartitionKey{Topic: fp.topic, Partition: fp.partition}
	var pieces [tailPieces][]byte
	if ps, n, next, ident, ok := c.G.tail.get(key, nil, uint64(fp.offset), math.MaxUint64, fp.pmax, pieces[:0], &fp.refs); ok {
		fp.cached, fp.n, fp.next, fp.ident = true, n, next, ident
		if len(ps) == 1 {
			fp.direct = ps[0]
			return
		}
		fp.buf = getBig()
		for _, b := range ps {
			fp.buf.B = append(fp.buf.B, b...)
		}
		c.G.tail.release(&fp.refs)
		return
	}
	fp.buf = getBig()
	fp.n, fp.code, fp.next = c.fetchPartitionTo(fp.buf, fp.topic, fp.partition, uint64(fp.offset), fp.pmax)
	fp.over = fp.n > fp.pmax
}

// assemblePart answers one partition from its lookups, as the sequential
// path does, and returns how many of its polled bytes to keep and the
// partition's error code.
func (c *Call) assemblePart(sp *kmsg.FetchResponseTopicPartition, rp *kmsg.FetchRequestTopicPartition, ti bridge.TopicInfo, tcode int16, fp *fetchPart, total, limit int) (int, int16) {
	code := tcode
	if code == 0 && (rp.Partition < 0 || rp.Partition >= ti.Partitions) {
		code = kerr.UnknownTopicOrPartition.Code
	}
	if code == 0 && fp != nil && fp.notLeader {
		code = kerr.NotLeaderForPartition.Code
	}
	if code != 0 {
		return 0, code
	}
	if fp == nil { // negative fetch offset
		return 0, kerr.OffsetOutOfRange.Code
	}
	if fp.stateErr != nil {
		return 0, errCode(fp.stateErr, opRead)
	}
	if fp.cached && fp.ident != identityOf(&ti) {
		// Cached for another life of the topic (made again elsewhere
		// under the same name): not these records. The next Fetch reads
		// the store.
		c.G.tail.forget(PartitionKey{Topic: fp.topic, Partition: fp.partition}, fp.ident)
		c.G.tail.release(&fp.refs)
		fp.cached, fp.direct, fp.n = false, nil, 0
	}
	hwm := fp.state.Next
	if fp.n > 0 && fp.next > hwm {
		hwm = fp.next
	}
	sp.HighWatermark = int64(hwm)
	sp.LastStableOffset = int64(hwm)
	sp.LogStartOffset = int64(fp.state.Earliest)
	if uint64(fp.offset) < fp.state.Earliest || uint64(fp.offset) > hwm {
		return 0, kerr.OffsetOutOfRange.Code
	}
	if fp.n == 0 {
		if uint64(fp.offset) < fp.state.Next {
			return 0, fp.code
		}
		return 0, 0
	}
	// KIP-74 as on the sequential path: only the first partition with
	// data may go over its budget, and nothing may go over max_bytes once
	// the response holds data.
	if total > 0 && (fp.over || total+fp.n > limit) {
		return 0, 0
	}
	return fp.n, 0
}

// runBounded runs every task, at most limit at once (the last on the
// calling goroutine), and returns when all have ended.
func runBounded(tasks []func(), limit int) {
	if limit < 1 {
		limit = 1
	}
	switch len(tasks) {
	case 0:
		return
	case 1:
		tasks[0]()
		return
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, t := range tasks[:len(tasks)-1] {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t()
		})
	}
	sem <- struct{}{}
	tasks[len(tasks)-1]()
	<-sem
	wg.Wait()
}
