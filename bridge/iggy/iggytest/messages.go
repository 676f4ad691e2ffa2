package iggytest

import (
	"errors"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// send admits a SendMessages body as the real server does (PROTOCOL.md
// 6.10) and appends the batch. ok=false means the body failed admission
// and, as from Iggy, no reply is sent.
func (s *Server) send(body []byte) (status uint32, parts [][]byte, ok bool) {
	rd := wire.NewReader(body)
	meta := rd.U32()
	sid, tid, ok := readTopicIdents(rd)
	pkind, plen := rd.U8(), int(rd.U8())
	pval := rd.Bytes(plen)
	count := rd.U32()
	if !ok || rd.Failed() || uint64(len(body)-rd.Len()-4) != uint64(meta) {
		return 0, nil, false
	}
	batch := rd.Rest()
	v, err := bridge.VerifyIggyBatch(batch)
	if err != nil || v.Length != uint64(len(batch)) || v.Count != count {
		return 0, nil, false
	}
	st, t, st0 := s.cat.resolve(sid, tid)
	if st0 != wire.StatusOK {
		return wire.StatusResourceNotFound, nil, true
	}
	p, status, ok := s.pickPartition(st, t, pkind, pval)
	if !ok || status != wire.StatusOK {
		return status, nil, ok
	}
	base, err := s.store.Append(ctx(), st.name, t.Name, int32(p), batch)
	switch {
	case errors.Is(err, bridge.ErrTopicNotFound), errors.Is(err, bridge.ErrPartitionNotFound):
		return wire.StatusResourceNotFound, nil, true
	case errors.Is(err, bridge.ErrInvalidBatch):
		return 0, nil, false
	case err != nil:
		return wire.StatusError, nil, true
	}
	b := le.AppendUint32(make([]byte, 0, 24), 1)
	b = le.AppendUint32(b, st.id)
	b = le.AppendUint32(b, t.ID)
	b = le.AppendUint32(b, p)
	b = le.AppendUint64(b, base)
	return wire.StatusOK, one(b), true
}

// pickPartition resolves the partitioning field. MessagesKey is not served
// (the gateway never sends it): status InvalidCommand.
func (s *Server) pickPartition(st *stream, t bridge.TopicInfo, kind uint8, val []byte) (uint32, uint32, bool) {
	var p uint32
	switch {
	case kind == 2 && len(val) == 4:
		p = le.Uint32(val)
	case kind == 1 && len(val) == 0:
		if t.Partitions <= 0 {
			return 0, wire.StatusResourceNotFound, true
		}
		s.cat.mu.Lock()
		k := topicKey{st.name, t.Name}
		p = s.cat.rr[k] % uint32(t.Partitions)
		s.cat.rr[k]++
		s.cat.mu.Unlock()
	case kind == 3 && len(val) >= 1:
		return 0, wire.StatusInvalidCommand, true
	default:
		return 0, 0, false
	}
	if int64(p) >= int64(t.Partitions) {
		return 0, wire.StatusResourceNotFound, true
	}
	return p, wire.StatusOK, true
}

// pollReq is a decoded PollMessages body: the consumer and partition as
// the consumer-offset bodies have them, then the poll's own fields.
type pollReq struct {
	offsetReq
	strategy   uint8
	value      uint64
	count      uint32
	autoCommit uint8
}

func parsePoll(body []byte) (pollReq, bool) {
	rd := wire.NewReader(body)
	var r pollReq
	var ok bool
	r.offsetReq, ok = readOffsetReq(rd)
	r.strategy, r.value = rd.U8(), rd.U64()
	r.count, r.autoCommit = rd.U32(), rd.U8()
	ok = ok && !rd.Failed() && rd.Len() == 0 && r.autoCommit <= 1 &&
		r.strategy >= 1 && r.strategy <= 5
	return r, ok
}

// poll serves PollMessages (PROTOCOL.md 6.11).
func (s *Server) poll(body []byte) (uint32, [][]byte) {
	r, ok := parsePoll(body)
	if !ok {
		return wire.StatusInvalidCommand, nil
	}
	if r.kind == 2 {
		return statusGroupNotFound, nil // groups are not served here
	}
	st, t, status := s.cat.resolve(r.sid, r.tid)
	if status != wire.StatusOK {
		return status, nil
	}
	p, ok := r.target(t)
	if !ok {
		return wire.StatusPartitionNotFound, nil
	}
	current, n, err := s.cat.partitionStats(st, t, p)
	if err != nil {
		return wire.StatusError, nil
	}
	sel := s.selection(&r, st, t, p, current, n)
	recs, matched := s.collect(st, t, p, sel)
	if r.autoCommit == 1 && matched > 0 {
		s.cat.mu.Lock()
		s.cat.offsets[offsetKey{st.name, t.Name, p, r.kind, r.consumer.key()}] = sel.last
		s.cat.mu.Unlock()
	}
	head := le.AppendUint32(make([]byte, 0, 16), p)
	head = le.AppendUint64(head, current)
	head = le.AppendUint32(head, matched)
	return wire.StatusOK, append([][]byte{head}, recs...)
}

// selection is which messages a poll returns.
type selection struct {
	empty   bool
	from    uint64 // first offset to look at
	ceiling uint64 // last committed offset
	minTime uint64 // timestamp strategy: batch append time at least this
	byTime  bool
	count   uint32
	last    uint64 // set by collect: last offset returned
}

func (s *Server) selection(r *pollReq, st *stream, t bridge.TopicInfo, p uint32, current, n uint64) *selection {
	sel := &selection{ceiling: current, count: r.count}
	if n == 0 || r.count == 0 {
		sel.empty = true
		return sel
	}
	switch r.strategy {
	case 1:
		sel.from = r.value
	case 2:
		sel.byTime, sel.minTime = true, r.value
		sel.from = current + 1 - n
	case 3:
		sel.from = 0
	case 4:
		sel.from = current - min(current, uint64(r.count-1))
	case 5:
		s.cat.mu.Lock()
		o, ok := s.cat.offsets[offsetKey{st.name, t.Name, p, r.kind, r.consumer.key()}]
		s.cat.mu.Unlock()
		if ok {
			sel.from = o + 1
		}
	}
	sel.empty = sel.from > current
	return sel
}

// collect reads matching messages from the store as stored batch records,
// slicing a batch (with a rewritten header, as Iggy does) when only part
// of it matches.
func (s *Server) collect(st *stream, t bridge.TopicInfo, p uint32, sel *selection) ([][]byte, uint32) {
	if sel.empty {
		return nil, 0
	}
	var recs [][]byte
	var matched uint32
	size := wire.HeaderSize + 16
	_ = s.store.Poll(ctx(), st.name, t.Name, int32(p), sel.from, wire.MaxFrame/2, func(b []byte) bool {
		rec, k, last := sliceBatch(b, sel, sel.count-matched)
		if k == 0 {
			return true
		}
		if size+len(rec) > wire.MaxFrame {
			return false
		}
		size += len(rec)
		recs = append(recs, rec)
		matched += k
		sel.last = last
		return matched < sel.count
	})
	return recs, matched
}

// sliceBatch returns a copy of the part of stored batch b that sel
// selects (at most limit messages), its message count and last offset.
func sliceBatch(b []byte, sel *selection, limit uint32) ([]byte, uint32, uint64) {
	v, err := bridge.ParseIggyBatch(b)
	if err != nil || (sel.byTime && v.BaseTimestamp < sel.minTime) {
		return nil, 0, 0
	}
	frames := v.Messages
	start, end := -1, 0
	var k uint32
	var last uint64
	for pos := 0; pos+bridge.MessageHeaderSize <= len(frames) && k < limit; {
		n := bridge.MessageHeaderSize + int(le.Uint32(frames[pos+32:])) + int(le.Uint32(frames[pos+36:]))
		off := v.BaseOffset + uint64(le.Uint32(frames[pos+24:]))
		if off > sel.ceiling {
			break
		}
		if off >= sel.from {
			if start < 0 {
				start = pos
			}
			end, last = pos+n, off
			k++
		}
		pos += n
	}
	if k == 0 {
		return nil, 0, 0
	}
	if k == v.Count {
		return append([]byte(nil), b[:v.Length]...), k, last
	}
	rec := make([]byte, 0, bridge.BatchHeaderSize+end-start)
	rec = append(rec, b[:bridge.BatchHeaderSize]...)
	rec = append(rec, frames[start:end]...)
	le.PutUint64(rec[32:], uint64(len(rec)))
	le.PutUint32(rec[48:], k)
	bridge.StampIggyBatch(rec, v.PartitionID, v.BaseOffset, v.BaseTimestamp)
	return rec, k, last
}

// offsetReq is a decoded consumer-offset body.
type offsetReq struct {
	kind      uint8
	consumer  ident
	sid, tid  ident
	hasPart   uint8
	partition uint32
}

// target is the partition r names (0 when it names none); ok=false when
// t has no such partition.
func (r *offsetReq) target(t bridge.TopicInfo) (uint32, bool) {
	p := uint32(0)
	if r.hasPart == 1 {
		p = r.partition
	}
	return p, int64(p) < int64(t.Partitions)
}

func readOffsetReq(rd *wire.Reader) (offsetReq, bool) {
	var r offsetReq
	var ok1, ok2 bool
	r.kind = rd.U8()
	r.consumer, ok1 = readIdent(rd)
	r.sid, r.tid, ok2 = readTopicIdents(rd)
	r.hasPart, r.partition = rd.U8(), rd.U32()
	return r, ok1 && ok2 && !rd.Failed() && (r.kind == 1 || r.kind == 2) && r.hasPart <= 1
}

func (s *Server) getOffset(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	r, ok := readOffsetReq(rd)
	if !ok || rd.Len() != 0 {
		return wire.StatusInvalidCommand, nil
	}
	st, t, status := s.cat.resolve(r.sid, r.tid)
	if status != wire.StatusOK {
		return wire.StatusOK, nil // a missing stream or topic stores no offset: empty body
	}
	p, ok := r.target(t)
	if !ok {
		return wire.StatusPartitionNotFound, nil
	}
	current, _, _ := s.cat.partitionStats(st, t, p)
	s.cat.mu.Lock()
	o, ok := s.cat.offsets[offsetKey{st.name, t.Name, p, r.kind, r.consumer.key()}]
	s.cat.mu.Unlock()
	if !ok {
		return wire.StatusOK, nil
	}
	b := le.AppendUint32(make([]byte, 0, 20), p)
	b = le.AppendUint64(b, current)
	return wire.StatusOK, one(le.AppendUint64(b, o))
}

// offsetTarget resolves a partition-plane offset op; any failure is status
// 20, as the partition-op router reports it.
func (s *Server) offsetTarget(r *offsetReq) (offsetKey, uint64, uint64, uint32) {
	if r.hasPart != 1 || r.kind != 1 {
		return offsetKey{}, 0, 0, wire.StatusResourceNotFound
	}
	st, t, status := s.cat.resolve(r.sid, r.tid)
	if status != wire.StatusOK || int64(r.partition) >= int64(t.Partitions) {
		return offsetKey{}, 0, 0, wire.StatusResourceNotFound
	}
	current, n, _ := s.cat.partitionStats(st, t, r.partition)
	return offsetKey{st.name, t.Name, r.partition, r.kind, r.consumer.key()}, current, n, wire.StatusOK
}

func (s *Server) storeOffset(body []byte) uint32 {
	rd := wire.NewReader(body)
	r, ok := readOffsetReq(rd)
	offset, ack := rd.U64(), rd.U8()
	if !ok || rd.Failed() || rd.Len() != 0 || ack > 1 {
		return wire.StatusInvalidCommand
	}
	k, current, n, status := s.offsetTarget(&r)
	if status != wire.StatusOK {
		return status
	}
	if n == 0 || offset > current {
		return wire.StatusInvalidOffset
	}
	s.cat.mu.Lock()
	s.cat.offsets[k] = offset
	s.cat.mu.Unlock()
	return wire.StatusOK
}

func (s *Server) deleteOffset(body []byte) uint32 {
	rd := wire.NewReader(body)
	r, ok := readOffsetReq(rd)
	ack := rd.U8()
	if !ok || rd.Failed() || rd.Len() != 0 || ack > 1 {
		return wire.StatusInvalidCommand
	}
	k, _, _, status := s.offsetTarget(&r)
	if status != wire.StatusOK {
		return status
	}
	s.cat.mu.Lock()
	defer s.cat.mu.Unlock()
	if _, ok := s.cat.offsets[k]; !ok {
		return wire.StatusConsumerOffsetNotFound
	}
	delete(s.cat.offsets, k)
	return wire.StatusOK
}
