// ShareFetch: v1-2
//
// Behavior:
//   - Share sessions (KIP-932): epoch 0 opens (or replaces) the member's
//     session with the partitions named; a later epoch must be the
//     session's next (INVALID_SHARE_SESSION_EPOCH; no session:
//     SHARE_SESSION_NOT_FOUND), adds the partitions named and drops the
//     forgotten ones; -1 closes it after applying the acknowledgements, and
//     releases what the member still holds (fetching then is
//     INVALID_REQUEST). Acknowledgements in an epoch-0 request are
//     INVALID_REQUEST; more than group.share.max.share.sessions sessions
//     SHARE_SESSION_LIMIT_REACHED. A member id must be 1-36 bytes.
//   - Piggy-backed acknowledgements are applied first and made durable
//     before the answer: accept, release (available again, or archived at
//     share.delivery.count.limit), reject, gap; renew (v2 with IsRenewAck)
//     extends the lock. An offset the member does not hold is
//     INVALID_RECORD_STATE for its partition (AcknowledgeErrorCode).
//   - Then every partition of the session is read through the Fetch
//     pipeline (tail cache, store reads, read_committed by the group's
//     share.isolation.level) from its first available record, and the
//     records found available are acquired for the member, up to
//     MaxRecords over the request (ShareAcquireMode 0, batch-optimized:
//     whole batches, so up to one batch over; 1, record-limit: exactly),
//     with at most group.share.partition.max.record.locks in flight per
//     partition (batch-optimized: but for the rest of a batch the window
//     grew into below it, as Kafka). AcquiredRecords lists them with their
//     delivery counts;
//     the record batches holding them are returned whole (the client
//     delivers only the acquired offsets). Control batches and, under
//     read_committed, aborted transactions' batches are archived as the
//     share partition passes them.
//   - A share partition new to its group starts by share.auto.offset.reset
//     (latest, earliest, by_duration:<ISO 8601>); one whose start fell
//     below the log's start (retention, DeleteRecords) moves up to it.
//   - Long poll: with nothing acquired, MaxWaitMillis > 0 and the call not
//     Final, the call parks on the session's partitions until records are
//     produced, released or their locks expire, or the wait ends.
//   - AcquisitionLockTimeoutMillis is the group's
//     share.record.lock.duration.ms.
//   - A partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION, an
//     unknown topic id UNKNOWN_TOPIC_ID; neither joins the session.
//   - ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED at the top);
//     READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition).
//
// Version notes:
//   - v0 was Kafka 4.0's early access, removed in 4.1. v1 adds MaxRecords
//     and BatchSize; v2 (Kafka 4.2) ShareAcquireMode (KIP-1206) and
//     IsRenewAck (KIP-1222: renew acknowledgements only; every fetch
//     field must then be 0, else INVALID_REQUEST).

package handlers

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/share"
)

func init() {
	register(Spec{Key: 78, MinVersion: 1, MaxVersion: 2, Gated: shareServed, Handle: typedReq(shareFetch), LargeReply: true})
}

// shareRun is a ShareFetch's resolved session, kept across re-runs.
type shareRun struct {
	res share.SessionResult
	// bad are the partitions the request named by an id no topic has.
	bad []badSharePart
}

type badSharePart struct {
	id        [16]byte
	partition int32
	code      int16
}

// defaultShareMaxRecords is the Java share consumer's max.poll.records.
const defaultShareMaxRecords = 500

func shareFetch(c *Call, req *kmsg.ShareFetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	g := c.G
	group, member, set, code := c.shareMember(req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(set.LockMs)
	renewOnly := req.Version >= 2 && req.IsRenewAck
	if c.shareRun == nil {
		if renewOnly && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		sr := share.SessionRequest{Group: group, Member: member, Epoch: req.ShareSessionEpoch, Fetch: true, RenewOK: renewOnly, Conn: c.ConnID}
		run := &shareRun{}
		for i := range req.Topics {
			rt := &req.Topics[i]
			name, code := c.topicNameByID(rt.TopicID)
			var parts int32
			if code == 0 {
				// Only partitions that exist join the session, so a client
				// cannot grow it without bound.
				ti, err := g.Store.Topic(c.Ctx, g.Cfg.Stream, name)
				switch {
				case err != nil:
					code = errCode(err, opMeta)
				case !c.sameTopicID(ti, rt.TopicID):
					code = kerr.UnknownTopicID.Code
				default:
					parts = ti.Partitions
				}
			}
			for j := range rt.Partitions {
				rp := &rt.Partitions[j]
				pcode := code
				if pcode == 0 && (rp.Partition < 0 || rp.Partition >= parts) {
					pcode = kerr.UnknownTopicOrPartition.Code
				}
				if pcode != 0 {
					run.bad = append(run.bad, badSharePart{rt.TopicID, rp.Partition, pcode})
					continue
				}
				tp := share.TP{Topic: name, Partition: rp.Partition}
				sr.Add = append(sr.Add, share.SessionPart{TP: tp, TopicID: rt.TopicID})
				for _, b := range rp.AcknowledgementBatches {
					sr.Acks = append(sr.Acks, share.Ack{TP: tp, First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
				}
			}
		}
		for _, f := range req.ForgottenTopicsData {
			name, code := c.topicNameByID(f.TopicID)
			if code != 0 {
				continue
			}
			for _, p := range f.Partitions {
				sr.Forget = append(sr.Forget, share.TP{Topic: name, Partition: p})
			}
		}
		if renewOnly {
			sr.Add = nil // renewing fetches nothing new into the session
		}
		run.res = g.Share.Session(c.Ctx, sr)
		if run.res.Code != 0 {
			resp.ErrorCode = run.res.Code
			if run.res.Msg != "" {
				resp.ErrorMessage = kmsg.StringPtr(run.res.Msg)
			}
			return resp, nil
		}
		c.shareRun = run
	}
	run := c.shareRun
	sf := shareFetchRun{c: c, req: req, resp: resp, set: set, run: run, group: group, member: member}
	if req.ShareSessionEpoch != -1 && !renewOnly {
		keys, since := sf.watchKeys()
		got := sf.acquire()
		if got == 0 && keys != nil {
			sf.release()
			wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
			if g.Cfg.MaxFetchWait > 0 && wait > g.Cfg.MaxFetchWait {
				wait = g.Cfg.MaxFetchWait
			}
			c.ParkSince(keys, time.Now().Add(wait), since)
			return nil, nil
		}
	}
	sf.answerAcks()
	for _, b := range run.bad {
		sp := sf.part(b.id, b.partition)
		sp.ErrorCode = b.code
	}
	if bufs, held := sf.fr.bufs, sf.fr.held; len(bufs) > 0 || len(held) > 0 {
		c.Defer(func() { releaseFetched(g.tail, bufs, held) })
	}
	return resp, nil
}

// shareFetchRun is one pass of a ShareFetch over its session's
// partitions. The call's goroutine.
type shareFetchRun struct {
	c             *Call
	req           *kmsg.ShareFetchRequest
	resp          *kmsg.ShareFetchResponse
	set           share.Settings
	run           *shareRun
	group, member string
	fr            fetchRun
}

// watchKeys are the partitions a ShareFetch that acquires nothing parks
// on, with the watch generation taken before reading (nil: it may not
// park).
func (sf *shareFetchRun) watchKeys() ([]PartitionKey, uint64) {
	if sf.req.MaxWaitMillis <= 0 || sf.c.Final || len(sf.run.res.Parts) == 0 {
		return nil, 0
	}
	keys := make([]PartitionKey, len(sf.run.res.Parts))
	for i, p := range sf.run.res.Parts {
		keys[i] = PartitionKey{Topic: p.Topic, Partition: p.Partition}
	}
	return keys, sf.c.G.Watch.Generation(keys)
}

// part returns the response entry of a partition, adding it.
func (sf *shareFetchRun) part(id [16]byte, partition int32) *kmsg.ShareFetchResponseTopicPartition {
	resp := sf.resp
	ti := -1
	for i := range resp.Topics {
		if resp.Topics[i].TopicID == id {
			ti = i
			break
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = id
		resp.Topics = append(resp.Topics, t)
		ti = len(resp.Topics) - 1
	}
	ps := &resp.Topics[ti].Partitions
	for i := range *ps {
		if (*ps)[i].Partition == partition {
			return &(*ps)[i]
		}
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition = partition
	name := ""
	if sf.c.G.Cfg.Cluster != nil {
		name, _ = sf.c.topicNameByID(id) // only cluster mode names another leader
	}
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = sf.c.shareLeader(name, partition)
	sp.Records = []byte{}
	*ps = append(*ps, sp)
	return &(*ps)[len(*ps)-1]
}

// answerAcks puts the acknowledgement codes in the response.
func (sf *shareFetchRun) answerAcks() {
	for tp, code := range sf.run.res.Acks {
		id := sf.topicID(tp)
		sp := sf.part(id, tp.Partition)
		sp.AcknowledgeErrorCode = code
	}
}

// topicID is the id the session keeps for tp.
func (sf *shareFetchRun) topicID(tp share.TP) [16]byte {
	for _, p := range sf.run.res.Parts {
		if p.TP == tp {
			return p.TopicID
		}
	}
	ti, err := sf.c.G.Store.Topic(sf.c.Ctx, sf.c.G.Cfg.Stream, tp.Topic)
	if err != nil {
		return [16]byte{}
	}
	return sf.c.G.topicNames.idOf(ti)
}

// release lets go of the records read, for a call that parks instead.
func (sf *shareFetchRun) release() {
	releaseFetched(sf.c.G.tail, sf.fr.bufs, sf.fr.held)
	sf.fr.bufs, sf.fr.held = nil, nil
	sf.resp.Topics = nil
}

// acquire reads the session's partitions and acquires their available
// records for the member; it returns how many it acquired.
func (sf *shareFetchRun) acquire() int {
	c, g := sf.c, sf.c.G
	parts := sf.run.res.Parts
	freq := kmsg.NewPtrFetchRequest()
	freq.Version = 12
	freq.MaxBytes = sf.req.MaxBytes
	if sf.set.ReadCommitted {
		freq.IsolationLevel = 1
	}
	fresp := freq.ResponseKind().(*kmsg.FetchResponse)
	type slot struct {
		part share.SessionPart
		from int64
		code int16
		ti   int
		pi   int
	}
	slots := make([]slot, 0, len(parts))
	for _, p := range parts {
		s := slot{part: p}
		if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, p.Topic) {
			s.code = kerr.TopicAuthorizationFailed.Code
			slots = append(slots, s)
			continue
		}
		from, err := g.Share.FetchFrom(c.Ctx, sf.group, p.TP, p.TopicID, func(ctx2 context.Context) (int64, error) {
			return c.shareStart(ctx2, sf.set.AutoOffsetReset, p.Topic, p.Partition)
		})
		if err != nil {
			s.code = errCode(err, opRead)
			slots = append(slots, s)
			continue
		}
		s.from = from
		ti := -1
		for i := range freq.Topics {
			if freq.Topics[i].Topic == p.Topic {
				ti = i
			}
		}
		if ti < 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = p.Topic
			freq.Topics = append(freq.Topics, rt)
			st := kmsg.NewFetchResponseTopic()
			st.Topic = p.Topic
			fresp.Topics = append(fresp.Topics, st)
			ti = len(freq.Topics) - 1
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.Partition, from, sf.req.MaxBytes
		freq.Topics[ti].Partitions = append(freq.Topics[ti].Partitions, rp)
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = p.Partition
		sp.RecordBatches = []byte{}
		fresp.Topics[ti].Partitions = append(fresp.Topics[ti].Partitions, sp)
		s.ti, s.pi = ti, len(freq.Topics[ti].Partitions)-1
		slots = append(slots, s)
	}
	limit := max(int(sf.req.MaxBytes), 0)
	if m := int(g.Cfg.MaxFrameSize); m > 0 && limit > m {
		limit = m
	}
	if r := c.ReplyRoom; r > 0 && limit > r {
		limit = r
	}
	sf.fr = fetchRun{c: c, req: freq, resp: fresp, limit: limit, batched: g.Store.Capabilities().TopicStateInOneCall, cluster: g.Cfg.Cluster}
	if len(freq.Topics) > 0 {
		sf.fr.inOrder(c.ReplyRoom < 0)
	}

	left := int(sf.req.MaxRecords)
	if left <= 0 {
		left = defaultShareMaxRecords
	}
	lim := share.AcquireLimits{MaxInFlight: sf.set.MaxInFlight, LockMs: sf.set.LockMs, DeliveryLimit: sf.set.DeliveryLimit,
		Strict: sf.req.Version >= 2 && sf.req.ShareAcquireMode == 1}
	total := 0
	for _, s := range slots {
		if s.code != 0 {
			sp := sf.part(s.part.TopicID, s.part.Partition)
			sp.ErrorCode = s.code
			continue
		}
		fp := &fresp.Topics[s.ti].Partitions[s.pi]
		switch fp.ErrorCode {
		case 0:
		case kerr.OffsetOutOfRange.Code:
			// The log no longer holds the share partition's start:
			// move up to the log start; the next fetch reads from there.
			if fp.LogStartOffset > s.from {
				_ = g.Share.SkipTo(c.Ctx, sf.group, s.part.TP, fp.LogStartOffset)
				g.Watch.Signal(PartitionKey{Topic: s.part.Topic, Partition: s.part.Partition})
			}
			continue
		default:
			sp := sf.part(s.part.TopicID, s.part.Partition)
			sp.ErrorCode = fp.ErrorCode
			continue
		}
		if len(fp.RecordBatches) == 0 || left <= 0 {
			continue
		}
		batches := shareBatches(fp.RecordBatches, fp.AbortedTransactions, sf.set.ReadCommitted)
		lim.MaxRecords = left
		got := g.Share.Acquire(sf.group, sf.member, s.part.TP, batches, lim)
		if len(got) == 0 {
			continue
		}
		n := 0
		sp := sf.part(s.part.TopicID, s.part.Partition)
		for _, a := range got {
			n += int(a.Last - a.First + 1)
			sp.AcquiredRecords = append(sp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
				FirstOffset: a.First, LastOffset: a.Last, DeliveryCount: a.Deliveries})
		}
		sp.Records = batchesHolding(fp.RecordBatches, got[0].First, got[len(got)-1].Last)
		left -= n
		total += n
	}
	return total
}

// shareBatches lists the batch headers of data (Kafka v2 record batches)
// for share.Partition.Acquire: control batches, and under read_committed
// the batches of the aborted transactions listed, have nothing to
// deliver.
func shareBatches(data []byte, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction, readCommitted bool) []share.Batch {
	var out []share.Batch
	open := map[int64]bool{} // producers inside an aborted transaction
	ai := 0
	for len(data) >= 61 {
		base := int64(binary.BigEndian.Uint64(data[0:8]))
		size := 12 + int(int32(binary.BigEndian.Uint32(data[8:12])))
		if size < 61 || size > len(data) {
			break
		}
		attrs := binary.BigEndian.Uint16(data[21:23])
		last := base + int64(int32(binary.BigEndian.Uint32(data[23:27])))
		pid := int64(binary.BigEndian.Uint64(data[43:51]))
		control, transactional := attrs&0x20 != 0, attrs&0x10 != 0
		skip := control
		if readCommitted {
			for ai < len(aborted) && aborted[ai].FirstOffset <= last {
				open[aborted[ai].ProducerID] = true
				ai++
			}
			if control {
				delete(open, pid)
			} else if transactional && open[pid] {
				skip = true
			}
		}
		out = append(out, share.Batch{Base: base, Last: last, Skip: skip})
		data = data[size:]
	}
	return out
}

// batchesHolding is the run of data's batches from the one holding first
// through the one holding last.
func batchesHolding(data []byte, first, last int64) []byte {
	start, end := -1, 0
	at := 0
	for len(data)-at >= 27 {
		b := data[at:]
		base := int64(binary.BigEndian.Uint64(b[0:8]))
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if size <= 12 || size > len(b) {
			break
		}
		end2 := base + int64(int32(binary.BigEndian.Uint32(b[23:27])))
		if start < 0 && end2 >= first {
			start = at
		}
		at += size
		if start >= 0 {
			end = at
		}
		if end2 >= last {
			break
		}
	}
	if start < 0 {
		return []byte{}
	}
	return data[start:end]
}

// shareMember reads the group and member of a ShareFetch or
// ShareAcknowledge and the group's settings, or answers the code of a
// caller without READ on the group.
func (c *Call) shareMember(groupID, memberID *string) (group, member string, set share.Settings, code int16) {
	group, member = strOr(groupID), strOr(memberID)
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, group) {
		return group, member, set, kerr.GroupAuthorizationFailed.Code
	}
	return group, member, c.G.Share.Settings(c.Ctx, group), 0
}

// strOr is *s, or "" for nil.
func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
