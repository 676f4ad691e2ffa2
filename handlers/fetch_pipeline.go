package handlers

import (
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/internal/fetchcache"
	"github.com/iggy-kafka/gateway/txn"
)

// The Fetch pipeline. fetch (01_fetch.go) resolves the session and the
// limits; a fetchRun then takes the request's partitions through three
// steps, each written once:
//
//   - plan: for each partition, whether this gateway may read it (a
//     valid topic name, a partition number >= 0, cluster leadership);
//   - read: each topic's lookup in one form (lookup: ACL, name, the
//     store's topic, and, when the store's Capabilities say
//     TopicStateInOneCall, its partitions' states in the same call), each
//     partition's state (readState) and records (read: the tail cache,
//     else a store poll mapped to Kafka batches by Gateway.Format);
//   - assemble, in request order: the error code in Kafka's order (place,
//     the state, outOfRange), high watermark, log start, and the records
//     kept under KIP-74 and max_bytes (keep).
//
// Two orders run those steps. inOrder (Cfg.FetchConcurrency 0 or 1, or
// budgets that do not fit max_bytes together, or a connection with no
// room) goes one partition after another: a partition is read only once
// its topic and state are known and pass the rules, within what the
// partitions before it kept. atOnce (Cfg.FetchConcurrency > 1, the Iggy
// backend, where every store call is a round trip) starts every lookup,
// state read and poll of the request together, at most
// Cfg.FetchConcurrency at a time, and applies the rules at assembly. A
// poll there may start before its partition's state is read and find
// records the state did not know yet, so the high watermark answered is
// the larger of the state's and one past the last record returned (the
// records exist by the time the reply leaves); inOrder answers the same
// way for a record appended between its state read and its poll.

// fetchRun is one Fetch call's pass through the pipeline. The call's
// goroutine owns it; at once, each task writes only its own topic's or
// partition's fields, and assembly reads them after every task ended.
type fetchRun struct {
	c       *Call
	req     *kmsg.FetchRequest
	resp    *kmsg.FetchResponse
	limit   int  // max_bytes, cut to the frame size and the connection's room
	batched bool // a topic's lookup reads its partitions' states too
	// keepStates: a batched lookup's states go to Gateway.fetchStates
	// (atOnce, the only order that answers from them).
	keepStates bool
	cluster    *cluster.Node

	// Assembly's results: the Kafka bytes kept, whether a partition
	// failed, and the buffers and tail-cache chunks the response points
	// into (released by fetch once the response is encoded).
	total  int
	anyErr bool
	bufs   []*bytebufferpool.ByteBuffer
	held   []fetchcache.Refs
}

// fetchTopic is a Fetch's lookup of one topic: the name asked for and
// whether it is a valid one, the topic, its error code, and, from a batched
// lookup, its partitions' states.
type fetchTopic struct {
	name   string
	id     [16]byte // asked by id (v13+): an invalid name when the id named no topic
	valid  bool
	ti     bridge.TopicInfo
	code   int16
	states []bridge.PartitionState
	// cached: ti and the states are an earlier Fetch's (fetchStateCache),
	// to be read again unless the records found answer for them
	// (cachedAnswers).
	cached *fetchState
}

// fetchPart is one requested partition on its way through the pipeline.
type fetchPart struct {
	rp *kmsg.FetchRequestTopicPartition
	// led: the topic name is valid, the partition not negative and this
	// gateway leads it (cluster mode), decided once before any read; only
	// such a partition is read.
	led bool
	// epochCode: the request's current_leader_epoch (v9+) does not match
	// the partition's (FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH, as a
	// Kafka leader answers before it reads); the partition is not read.
	epochCode int16
	state     bridge.PartitionState
	// stateCode is the error code of the state's read, 0 when state is
	// the partition's.
	stateCode int16
	fetchGot
}

// fetchGot is what read found for a partition: the zero value until read
// runs, and again once assemble kept or let go of the records (so inOrder
// reuses one fetchPart without clearing it for every partition).
type fetchGot struct {
	read   bool
	budget int // Kafka bytes it may return (KIP-74 aside)
	n      int // Kafka bytes read, in buf or in direct
	next   uint64
	// buf is the part's own buffer (appends never move another's bytes),
	// its batches after fetchHeadroom bytes (getFetchBuf); direct is one
	// run of the tail cache's bytes instead, with refs the chunks it
	// points into.
	buf    *bytebufferpool.ByteBuffer
	direct []byte
	refs   fetchcache.Refs
	// cached: the tail cache answered, for the topic life ident.
	cached bool
	ident  fetchcache.Identity
	code   int16 // the poll's error code when n == 0
}

// inOrder reads and assembles one partition after another, each read
// knowing its topic and state and getting what the ones before it left;
// full: the connection has no room, nothing is read. The worker goroutine
// running the call.
func (fr *fetchRun) inOrder(full bool) {
	var ft fetchTopic
	var fp fetchPart
	for i := range fr.req.Topics {
		rt := &fr.req.Topics[i]
		ft = newFetchTopic(rt.Topic, rt.TopicID)
		fr.lookup(&ft)
		ident := identityOf(&ft.ti)
		sps := fr.resp.Topics[i].Partitions
		for j := range rt.Partitions {
			fr.plan(&fp, &ft, &rt.Partitions[j])
			code := place(&ft, &fp)
			if code == 0 {
				fr.readState(&ft, &fp)
				st, off := &fp.state, fp.rp.FetchOffset
				if fp.stateCode == 0 && !outOfRange(off, st.Earliest, st.Next) && uint64(off) < st.Next && !full {
					fr.read(&ft, &fp, &ident, st.Next)
				}
			}
			fr.assemble(&ft, &fp, code, &sps[j])
		}
	}
}

// fetchTask is one store call of atOnce: a topic lookup, a partition's
// state or its records.
type fetchTask struct {
	kind uint8
	t, k int // the indexes of the topic and of the part
}

const (
	taskLookup uint8 = iota
	taskState
	taskRead
)

// atOnce starts every lookup, state and read of the request together,
// then assembles the partitions in request order. Each read's budget is
// its own partition_max_bytes (nothing is assembled before the reads), so
// it runs only when those fit max_bytes together (fetchBudgetsFit). It
// works on its own copy of the run, which its goroutines share, and
// returns it (the caller's stays on its stack). The worker goroutine
// running the call; it starts and waits for its own goroutines.
func (fr fetchRun) atOnce() fetchRun {
	fr.keepStates = fr.batched && fr.c.G.fetchStates.on
	n := partitionCount(fr.req)
	topics := make([]fetchTopic, len(fr.req.Topics))
	parts := make([]fetchPart, n)
	tasks := make([]fetchTask, 0, len(topics)+2*n)
	k := 0
	now := time.Now()
	for i := range fr.req.Topics {
		rt := &fr.req.Topics[i]
		ft := &topics[i]
		*ft = newFetchTopic(rt.Topic, rt.TopicID)
		if !fr.lookupCached(ft, rt, now) {
			tasks = append(tasks, fetchTask{taskLookup, i, 0})
		}
		for j := range rt.Partitions {
			fp := &parts[k]
			fr.plan(fp, ft, &rt.Partitions[j])
			if fp.led {
				if !fr.batched {
					tasks = append(tasks, fetchTask{taskState, i, k})
				}
				if fp.rp.FetchOffset >= 0 {
					tasks = append(tasks, fetchTask{taskRead, i, k})
				}
			}
			k++
		}
	}
	runBounded(len(tasks), fr.c.G.Cfg.FetchConcurrency, func(x int) {
		switch t := tasks[x]; t.kind {
		case taskLookup:
			fr.lookup(&topics[t.t])
		case taskState:
			fr.readState(&topics[t.t], &parts[t.k])
		case taskRead:
			// Neither the topic's life nor the high watermark is known
			// yet: assembly checks the cache's answer against the life
			// (checkLife), and cached batches were acknowledged by the
			// store, so they lie below its high watermark.
			fr.read(&topics[t.t], &parts[t.k], nil, math.MaxUint64)
		}
	})
	fr.recheckCached(topics, parts)
	k = 0
	for i := range fr.req.Topics {
		ft := &topics[i]
		for j := range fr.req.Topics[i].Partitions {
			fp := &parts[k]
			k++
			if fr.batched && fp.led {
				fr.readState(ft, fp)
			}
			code := place(ft, fp)
			if code == 0 && fp.stateCode == 0 {
				fr.checkLife(ft, fp)
			}
			fr.assemble(ft, fp, code, &fr.resp.Topics[i].Partitions[j])
		}
	}
	return fr
}

// newFetchTopic starts the lookup of topic name, asked for by id when id
// is not zero.
func newFetchTopic(name string, id [16]byte) fetchTopic {
	return fetchTopic{name: name, id: id, valid: validTopicName(name)}
}

// lookup reads topic ft.name into ft: the ACL check, the name, the
// store's topic (with its partitions' states when batched); a topic asked
// for by an id no topic has, or no longer has, is UNKNOWN_TOPIC_ID. Any
// goroutine.
func (fr *fetchRun) lookup(ft *fetchTopic) {
	if !fr.mayRead(ft) {
		return
	}
	c, name := fr.c, ft.name
	byID := ft.id != ([16]byte{})
	var err error
	if fr.batched {
		fs := &c.G.fetchStates
		gen := fs.gen.Load()
		ft.ti, ft.states, err = c.G.Store.TopicState(c.Ctx, c.G.Cfg.Stream, name)
		if err == nil && fr.keepStates {
			fs.put(name, newFetchState(ft.ti, ft.states), time.Now(), gen)
		}
	} else {
		ft.ti, err = c.topic(name, false)
	}
	ft.code = errCode(err, opRead)
	if byID && (ft.code == kerr.UnknownTopicOrPartition.Code || ft.code == 0 && !c.sameTopicID(ft.ti, ft.id)) {
		ft.code = kerr.UnknownTopicID.Code
	}
}

// mayRead reports whether topic ft may be looked up, else sets its code:
// the checks that need no store call. Any goroutine.
func (fr *fetchRun) mayRead(ft *fetchTopic) bool {
	switch {
	case ft.id != ([16]byte{}) && !ft.valid:
		ft.code = kerr.UnknownTopicID.Code
	case !fr.c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, ft.name):
		ft.code = kerr.TopicAuthorizationFailed.Code
	case !ft.valid:
		ft.code = kerr.UnknownTopicOrPartition.Code
	default:
		return true
	}
	return false
}

// lookupCached answers ft's lookup from fetchStateCache when it holds a
// state of the topic, recent enough, with every partition rt asks for
// (and, asked by id, the same topic id), and reports whether it did (a
// topic that may not be read counts as done: its code is set). The
// caller's goroutine, before any read starts.
func (fr *fetchRun) lookupCached(ft *fetchTopic, rt *kmsg.FetchRequestTopic, now time.Time) bool {
	if !fr.keepStates {
		return false
	}
	fs := &fr.c.G.fetchStates
	if !fr.mayRead(ft) {
		return true
	}
	e, ok := fs.get(ft.name, now)
	if !ok || ft.id != ([16]byte{}) && !fr.c.sameTopicID(e.ti, ft.id) {
		return false
	}
	for i := range rt.Partitions {
		if rt.Partitions[i].Partition >= e.ti.Partitions {
			return false
		}
	}
	ft.ti, ft.cached = e.ti, e
	return true
}

// recheckCached reads again, all at once, the topics whose cached state
// the records found do not answer for (cachedAnswers). After atOnce's
// reads, on its goroutine.
func (fr *fetchRun) recheckCached(topics []fetchTopic, parts []fetchPart) {
	var again []int
	k := 0
	for i := range topics {
		ft := &topics[i]
		n := len(fr.req.Topics[i].Partitions)
		if ft.cached != nil && !cachedAnswers(parts[k:k+n]) {
			ft.cached = nil
			again = append(again, i)
		}
		k += n
	}
	runBounded(len(again), fr.c.G.Cfg.FetchConcurrency, func(x int) {
		fr.lookup(&topics[again[x]])
	})
}

// cachedAnswers reports whether a topic's cached state may answer its
// partitions parts: each one this gateway may read found records starting
// at its fetch offset. Then the high watermark answered is at least one
// past them (assemble) and the log start is at most the fetch offset, as
// the store's are now, so the cached state can only make the answer late
// by its age, never wrong about the records. A partition that found none
// (caught up, out of range, an error) or found them past its fetch offset
// (the log start moved) needs the store's state to be answered.
func cachedAnswers(parts []fetchPart) bool {
	for i := range parts {
		fp := &parts[i]
		if !fp.led {
			continue // answered without its state (place)
		}
		if !fp.read || fp.n == 0 || firstOffset(fp) > fp.rp.FetchOffset {
			return false
		}
	}
	return true
}

// firstOffset is the base offset of the first batch fp found (fp.n > 0).
func firstOffset(fp *fetchPart) int64 {
	data := fp.direct
	if data == nil {
		data = fp.buf.B[fetchHeadroom:]
	}
	return int64(binary.BigEndian.Uint64(data))
}

// plan starts fp as request partition rp of topic ft (whose lookup may
// still be to come); fp holds no records (fetchGot), and its state is
// looked at only once readState set it.
func (fr *fetchRun) plan(fp *fetchPart, ft *fetchTopic, rp *kmsg.FetchRequestTopicPartition) {
	fp.rp = rp
	fp.led, fp.epochCode = false, 0
	if rp.Partition >= 0 && ft.valid {
		latest, leads := fr.cluster.LeaderEpoch(ft.name, rp.Partition)
		fp.led = leads && (fr.req.IsolationLevel != 1 || fr.txnReady())
		if leads && fr.req.Version >= 9 {
			fp.epochCode = currentEpochCode(rp.CurrentLeaderEpoch, latest)
			fp.led = fp.epochCode == 0
		}
	}
}

// txnReady reports whether this gateway knows the transactions of the
// partitions it leads (txn.Coordinator.Ready): a read_committed Fetch
// answers NOT_LEADER_OR_FOLLOWER until then, for the few milliseconds
// after a membership change in which a new leader loads them.
func (fr *fetchRun) txnReady() bool {
	tx := fr.c.G.Txn
	return tx == nil || tx.Ready()
}

// place is fp's error code from its topic's lookup, its partition number
// and its leader, in that order (Kafka's); 0 when the partition is here
// to be read.
func place(ft *fetchTopic, fp *fetchPart) int16 {
	switch {
	case ft.code != 0:
		return ft.code
	case fp.rp.Partition < 0 || fp.rp.Partition >= ft.ti.Partitions:
		return kerr.UnknownTopicOrPartition.Code
	case fp.epochCode != 0:
		return fp.epochCode
	case !fp.led:
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// outOfRange: a fetch from offset is OFFSET_OUT_OF_RANGE below the log
// start or past the high watermark, as on Kafka.
func outOfRange(offset int64, logStart, hwm uint64) bool {
	return offset < 0 || uint64(offset) < logStart || uint64(offset) > hwm
}

// readState reads fp's state: from its topic's batched lookup, else from
// the store. Any goroutine.
func (fr *fetchRun) readState(ft *fetchTopic, fp *fetchPart) {
	if fr.batched {
		if p := fp.rp.Partition; ft.cached != nil && p >= 0 && int(p) < len(ft.cached.states) {
			fp.state, fp.stateCode = ft.cached.state(int(p)), 0
		} else if p >= 0 && int(p) < len(ft.states) {
			fp.state, fp.stateCode = ft.states[p], 0
		} else {
			fp.state, fp.stateCode = bridge.PartitionState{}, errCode(bridge.ErrPartitionNotFound, opRead)
		}
		return
	}
	c := fr.c
	var err error
	fp.state, err = c.G.Store.Partition(c.Ctx, c.G.Cfg.Stream, ft.name, fp.rp.Partition)
	fp.stateCode = 0
	if err != nil {
		fp.stateCode = errCode(err, opRead)
	}
}

// read fills fp's records from the tail cache (only batches of topic life
// want when set, ending at or below hwm), else from the store, within what
// the partitions assembled before it left of max_bytes. Any goroutine.
func (fr *fetchRun) read(ft *fetchTopic, fp *fetchPart, want *fetchcache.Identity, hwm uint64) {
	// Both limits bound every partition, the first one included:
	// max_bytes 1 with a 100 MB partition limit is a 1-byte budget.
	// KIP-74: only until the response holds data may a partition go over
	// it, and then by one record (keep).
	room := fr.limit - fr.total
	fp.read, fp.budget = true, min(max(int(fp.rp.PartitionMaxBytes), 0), room)
	tail := fr.c.G.tail
	key := fetchcache.Key{Topic: ft.name, Partition: fp.rp.Partition}
	var pieces [fetchcache.Pieces][]byte
	if ps, n, next, ident, ok := tail.Get(key, want, uint64(fp.rp.FetchOffset), hwm, fp.budget, pieces[:0], &fp.refs); ok {
		fp.cached, fp.n, fp.next, fp.ident = true, n, next, ident
		if len(ps) == 1 {
			fp.direct = ps[0]
			return
		}
		fp.buf = getFetchBuf()
		for _, b := range ps {
			fp.buf.B = append(fp.buf.B, b...)
		}
		tail.Release(&fp.refs)
		return
	}
	if fr.total > 0 && room <= 0 {
		return // past the first partition with data nothing may go over
	}
	fp.buf = getFetchBuf()
	fr.poll(fp, key, hwm)
}

// poll appends Kafka batches of fp's partition from its fetch offset to
// fp.buf, within fp.budget but at least one record even above it (KIP-74;
// assembly drops the data when its partition is not the first with data),
// and sets fp.n, fp.next (one past the last offset appended) and fp.code
// (0 also when a stored message cannot be mapped after some records were
// appended: those are returned and the next fetch reports it). Any
// goroutine.
func (fr *fetchRun) poll(fp *fetchPart, key fetchcache.Key, hwm uint64) {
	g, buf := fr.c.G, fp.buf
	from := uint64(fp.rp.FetchOffset)
	if hwm > from {
		// Room for what the partition's last fetch says this one brings,
		// so the batches are not copied each time the buffer grows; a
		// quarter more, for the reply built around them (fetch_reply.go)
		// and for the next fetch that gets this buffer from the pool.
		want := len(buf.B) + g.fetchRatios.Expect(key, hwm-from, fp.budget)
		growFor(buf, want, want+want/4+4096)
	}
	// What the store's callback changes lives in one value (a callback
	// that escapes moves each variable it changes to the heap: one
	// allocation for all of them, not one each).
	var st pollTally
	st.cur = bridge.FetchCursor{From: from, MaxBytes: fp.budget, Uncompressed: g.Cfg.FetchUncompressed}
	// Iggy messages are larger than the Kafka records they map to (a
	// 64-byte frame header against a few bytes of record framing), by a
	// factor that depends on the record size: ask the store for the
	// partition's learned ratio (fetchcache.Ratios); the callback stops
	// early.
	pollMax := fp.budget
	if pollMax < math.MaxInt32/2 {
		pollMax = g.fetchRatios.StoreBudget(key, pollMax) + bridge.BatchHeaderSize
	}
	err := g.Store.Poll(fr.c.Ctx, g.Cfg.Stream, key.Topic, key.Partition, from, pollMax, func(batch []byte) bool {
		return st.add(g.Format, buf, batch)
	})
	g.fetchRatios.Learn(key, st.stored, st.kafka, st.whole)
	cur, mapErr := st.cur, st.mapErr
	fp.n, fp.next = len(buf.B)-fetchHeadroom, cur.Next
	switch {
	case err != nil && fp.n == 0:
		fp.code, fp.next = errCode(err, opRead), from
	case mapErr != nil && fp.n == 0:
		if g.Log != nil {
			g.Log.Warn("fetch: stored message cannot be mapped", "topic", key.Topic, "partition", key.Partition, "offset", cur.Next, "err", mapErr)
		}
		fp.code, fp.next = kerr.UnknownServerError.Code, from
	}
}

// pollTally is what a poll's callback keeps: the cursor, the first
// mapping error, and the bytes of the stored batches mapped whole, of what
// they became and their records (a batch cut by the fetch offset or by the
// budget would skew the partition's ratios).
type pollTally struct {
	cur                  bridge.FetchCursor
	mapErr               error
	stored, kafka, whole int
}

// add maps the stored batch into buf and reports whether the poll goes
// on. The store's callback goroutine.
func (t *pollTally) add(format bridge.BatchFormat, buf *bytebufferpool.ByteBuffer, batch []byte) bool {
	records, size := t.cur.Records, len(buf.B)
	// Its Kafka form is usually no larger than the stored batch: grow
	// once for it, doubling, rather than by append's quarter at a time,
	// which copies a large read several times over.
	growFor(buf, size+len(batch), 2*cap(buf.B))
	var sb bridge.StoredBatch
	var err error
	buf.B, sb, err = format.AppendKafka(buf.B, batch, &t.cur)
	if err != nil {
		t.mapErr = err
		return false
	}
	if t.cur.Records == 0 {
		return true // the whole batch lay below from
	}
	if t.cur.Records-records == int(sb.Count) {
		t.stored += len(batch)
		t.kafka += len(buf.B) - size
		t.whole += int(sb.Count)
	}
	// Stop at the first record that did not fit: continuing with the
	// next batch could skip it.
	return t.cur.Next >= sb.End() && t.cur.Bytes < t.cur.MaxBytes
}

// growFor gives buf room for need bytes in all, growing it to newCap (at
// least need) when it has less, its bytes copied once.
func growFor(buf *bytebufferpool.ByteBuffer, need, newCap int) {
	if cap(buf.B) < need {
		buf.B = append(make([]byte, 0, max(need, newCap)), buf.B...)
	}
}

// checkLife lets go of fp's records when the tail cache answered them for
// another life of the topic than its lookup found (made again elsewhere
// under the same name), and forgets the cache's entries of that life: the
// next Fetch reads the store. Only a read that did not know the topic's
// life yet (atOnce) needs it; fp's place and state are known good.
func (fr *fetchRun) checkLife(ft *fetchTopic, fp *fetchPart) {
	if fp.cached && fp.ident != identityOf(&ft.ti) {
		fr.c.G.tail.Forget(fetchcache.Key{Topic: ft.name, Partition: fp.rp.Partition}, fp.ident)
		fr.release(fp)
	}
}

// assemble answers fp in sp, code being place's, and keeps its records or
// lets them go. Assembly runs in request order, so fr.total is what the
// partitions before fp kept.
func (fr *fetchRun) assemble(ft *fetchTopic, fp *fetchPart, code int16, sp *kmsg.FetchResponseTopicPartition) {
	if code == 0 {
		code = fp.stateCode
	}
	if code == 0 {
		hwm := fp.state.Next
		if fp.n > 0 && fp.next > hwm {
			hwm = fp.next
		}
		sp.HighWatermark = int64(hwm)
		sp.LastStableOffset = int64(hwm)
		if tx := fr.c.G.Txn; tx != nil {
			fr.stable(tx, ft, fp, hwm, sp)
		}
		sp.LogStartOffset = int64(fp.state.Earliest)
		switch off := fp.rp.FetchOffset; {
		case outOfRange(off, fp.state.Earliest, hwm):
			code = kerr.OffsetOutOfRange.Code
		case fp.n == 0 && uint64(off) < fp.state.Next:
			code = fp.code
		}
	}
	if code != 0 {
		fr.anyErr = true
		sp.ErrorCode = code
	}
	if fp.read {
		fr.keep(fp, code, sp)
	}
}

// keep puts fp's records in sp unless its code or the limits say
// otherwise (KIP-74: only the first partition with data may go over its
// budget, and nothing may go over max_bytes once the response holds data),
// and leaves fp holding none.
func (fr *fetchRun) keep(fp *fetchPart, code int16, sp *kmsg.FetchResponseTopicPartition) {
	if code != 0 || fp.n == 0 || fr.total > 0 && (fp.n > fp.budget || fr.total+fp.n > fr.limit) {
		fr.release(fp)
		return
	}
	fr.total += fp.n
	if fp.direct != nil {
		sp.RecordBatches = fp.direct
		fr.held = append(fr.held, fp.refs)
	} else {
		sp.RecordBatches = fp.buf.B[fetchHeadroom : fetchHeadroom+fp.n : fetchHeadroom+fp.n]
		fr.bufs = append(fr.bufs, fp.buf)
	}
	fp.fetchGot = fetchGot{}
}

// releaseFetched lets go of what a response points into: after it was
// encoded, or when the call parks instead. Any goroutine, once.
func releaseFetched(tail *fetchcache.Tail, bufs []*bytebufferpool.ByteBuffer, held []fetchcache.Refs) {
	for _, b := range bufs {
		putBig(b)
	}
	for i := range held {
		tail.Release(&held[i])
	}
}

// release lets fp's records go: its buffer back to the pool, its
// tail-cache references dropped.
func (fr *fetchRun) release(fp *fetchPart) {
	putBig(fp.buf)
	fr.c.G.tail.Release(&fp.refs)
	fp.fetchGot = fetchGot{}
}

// fetchBudgetsFit reports whether the partitions' budgets, each at most
// limit, fit limit together, so reading them at once returns what reading
// them in order would.
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

// runBounded runs run(0) to run(n-1), at most limit at once (the last on
// the calling goroutine), and returns when all have ended.
func runBounded(n, limit int, run func(int)) {
	if limit < 1 {
		limit = 1
	}
	switch n {
	case 0:
		return
	case 1:
		run(0)
		return
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n - 1 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			run(i)
		})
	}
	sem <- struct{}{}
	run(n - 1)
	<-sem
	wg.Wait()
}

// identityOf is ti's identity for the tail cache.
func identityOf(ti *bridge.TopicInfo) fetchcache.Identity {
	return fetchcache.Identity{ID: ti.ID, Created: ti.CreatedAt}
}

// TailCacheStats are the tail cache's counts, for metrics.
type TailCacheStats = fetchcache.TailStats

// TailCacheStats reads the tail cache's counts. Any goroutine.
func (g *Gateway) TailCacheStats() TailCacheStats { return g.tail.Stats() }

// stable answers fp's last stable offset (the first offset of its oldest
// open transaction, else hwm) and, for a read_committed Fetch, keeps only
// the batches below it and lists the aborted transactions overlapping
// what is returned, as Kafka does: the consumer skips their records.
func (fr *fetchRun) stable(tx *txn.Coordinator, ft *fetchTopic, fp *fetchPart, hwm uint64, sp *kmsg.FetchResponseTopicPartition) {
	p := txn.Partition{Topic: ft.name, Partition: fp.rp.Partition}
	lso := tx.Index.LastStable(p, hwm)
	sp.LastStableOffset = int64(lso)
	if fr.req.IsolationLevel != 1 || !fp.read || fp.n == 0 {
		return
	}
	data := fp.direct
	if data == nil {
		data = fp.buf.B[fetchHeadroom : fetchHeadroom+fp.n]
	}
	if n := batchesBelow(data, lso); n < fp.n {
		fp.n = n
		if fp.next > lso {
			fp.next = lso
		}
		if n == 0 {
			return // keep lets the records go
		}
		if fp.direct != nil {
			fp.direct = fp.direct[:n]
		}
	}
	aborted := tx.Index.AbortedIn(nil, p, uint64(max(fp.rp.FetchOffset, 0)), fp.next)
	if len(aborted) > 0 {
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(aborted))
		for i, a := range aborted {
			sp.AbortedTransactions[i] = kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: int64(a.First)}
		}
	}
}

// batchesBelow is how many leading bytes of data, Kafka v2 record batches,
// hold the batches whose last offset is below lso.
func batchesBelow(data []byte, lso uint64) int {
	at := 0
	for len(data)-at >= 27 {
		b := data[at:]
		base := int64(binary.BigEndian.Uint64(b[0:8]))
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		last := base + int64(int32(binary.BigEndian.Uint32(b[23:27])))
		if size <= 12 || size > len(b) || last < 0 || uint64(last) >= lso {
			break
		}
		at += size
	}
	return at
}
