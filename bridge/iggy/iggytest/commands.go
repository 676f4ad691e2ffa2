package iggytest

import (
	"context"
	"errors"
	"math"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Status codes only the server side needs.
const (
	statusFeatureUnavailable   = 5
	statusUnsupportedOptionKey = 4041
	statusGroupNotFound        = 5000
)

// command serves one request body: the reply's status and payload parts.
type command func(s *Server, body []byte) (uint32, [][]byte)

// reads are the NonReplicated commands served after login, by code.
var reads = map[uint32]command{
	wire.CodeGetStream:         (*Server).getStream,
	wire.CodeGetTopic:          (*Server).getTopic,
	wire.CodeGetTopics:         (*Server).getTopics,
	wire.CodePollMessages:      (*Server).poll,
	wire.CodeGetConsumerOffset: (*Server).getOffset,
}

// metadataOps are the metadata-plane operations, by op.
var metadataOps = map[uint8]command{
	wire.OpCreateStream: (*Server).createStream,
	wire.OpDeleteStream: (*Server).deleteStream,
	wire.OpCreateTopic:  (*Server).createTopic,
	wire.OpDeleteTopic:  (*Server).deleteTopic,
	wire.OpUpdateTopic:  (*Server).updateTopic,
	wire.OpCreatePartitions: func(s *Server, body []byte) (uint32, [][]byte) {
		return s.changePartitions(wire.OpCreatePartitions, body)
	},
	wire.OpDeletePartitions: func(s *Server, body []byte) (uint32, [][]byte) {
		return s.changePartitions(wire.OpDeletePartitions, body)
	},
}

// run serves body with c; a command no table holds (nil) is
// InvalidCommand.
func (c command) run(s *Server, body []byte) (uint32, [][]byte) {
	if c == nil {
		return wire.StatusInvalidCommand, nil
	}
	return c(s, body)
}

// read serves a NonReplicated command after login.
func (s *Server) read(code uint32, body []byte) (uint32, [][]byte) {
	return reads[code].run(s, body)
}

// one wraps a single payload part.
func one(b []byte) [][]byte { return [][]byte{b} }

func (s *Server) getStream(body []byte) (uint32, [][]byte) {
	id, ok := streamBody(body)
	if !ok {
		return wire.StatusInvalidCommand, nil
	}
	st, ok := s.cat.stream(id)
	if !ok {
		return wire.StatusOK, nil // not found: empty body
	}
	ts, err := s.cat.topics(st.name)
	if err != nil {
		return wire.StatusError, nil
	}
	var msgs, size uint64
	var heads []byte
	for _, t := range ts {
		var m, z uint64
		heads, m, z = s.appendTopicHeader(heads, st, t)
		msgs, size = msgs+m, size+z
	}
	b := appendStream(nil, st, uint32(len(ts)), msgs, size)
	b = append(b, heads...)
	return wire.StatusOK, one(b)
}

func (s *Server) getTopic(body []byte) (uint32, [][]byte) {
	sid, tid, ok := topicBody(body)
	if !ok {
		return wire.StatusInvalidCommand, nil
	}
	st, t, status := s.cat.resolve(sid, tid)
	if status != wire.StatusOK {
		return wire.StatusOK, nil // not found: empty body
	}
	return wire.StatusOK, one(s.appendTopic(nil, st, t, 1))
}

func (s *Server) getTopics(body []byte) (uint32, [][]byte) {
	sid, ok := streamBody(body)
	if !ok {
		return wire.StatusInvalidCommand, nil
	}
	st, ok := s.cat.stream(sid)
	if !ok {
		return wire.StatusOK, one(le.AppendUint32(nil, 0))
	}
	ts, err := s.cat.topics(st.name)
	if err != nil {
		return wire.StatusError, nil
	}
	b := le.AppendUint32(nil, uint32(len(ts)))
	for _, t := range ts {
		b, _, _ = s.appendTopicHeader(b, st, t)
	}
	return wire.StatusOK, one(b)
}

// appendStream writes a stream record (PROTOCOL.md 6.7).
func appendStream(b []byte, st *stream, topics uint32, msgs, size uint64) []byte {
	b = le.AppendUint32(b, st.id)
	b = le.AppendUint64(b, st.created)
	b = le.AppendUint32(b, topics)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, msgs)
	b = append(b, byte(len(st.name)))
	b = append(b, st.name...)
	return le.AppendUint32(b, 0) // no options
}

// partStat is one partition's numbers as Iggy reports them.
type partStat struct{ current, count, size uint64 }

func (s *Server) partStats(st *stream, t bridge.TopicInfo) []partStat {
	out := make([]partStat, max(t.Partitions, 0))
	for p := range out {
		cur, n, _ := s.cat.partitionStats(st, t, uint32(p))
		next := uint64(0)
		if n > 0 || cur > 0 {
			next = cur + 1
		}
		out[p] = partStat{cur, n, s.cat.partitionSize(st, t, uint32(p), next)}
	}
	return out
}

// appendTopicHeader writes a topic header (PROTOCOL.md 6.8) and returns
// its message count and size.
func (s *Server) appendTopicHeader(b []byte, st *stream, t bridge.TopicInfo) ([]byte, uint64, uint64) {
	return s.appendTopicHeaderWith(b, st, t, s.partStats(st, t))
}

func (s *Server) appendTopicHeaderWith(b []byte, st *stream, t bridge.TopicInfo, ps []partStat) ([]byte, uint64, uint64) {
	m := s.cat.metaOf(st.name, t)
	msgs, size := m.carriedMsgs, m.carriedSize
	for _, p := range ps {
		msgs, size = msgs+p.count, size+p.size
	}
	b = le.AppendUint32(b, m.slot)
	b = le.AppendUint64(b, t.CreatedAt)
	b = le.AppendUint32(b, uint32(t.Partitions))
	b = le.AppendUint64(b, m.expiry)
	b = append(b, m.compression)
	b = le.AppendUint64(b, m.maxSize)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, msgs)
	b = append(b, byte(len(t.Name)))
	b = append(b, t.Name...)
	return appendOptionBlocks(b, m.opts), msgs, size
}

// appendTopic writes a topic header and its 40-byte partition records.
// segments is what each partition reports: 0 in the CreateTopic reply
// (built before the partitions open their first segment), 1 after.
func (s *Server) appendTopic(b []byte, st *stream, t bridge.TopicInfo, segments uint32) []byte {
	ps := s.partStats(st, t)
	b, _, _ = s.appendTopicHeaderWith(b, st, t, ps)
	for p, x := range ps {
		b = le.AppendUint32(b, uint32(p))
		b = le.AppendUint64(b, t.CreatedAt)
		b = le.AppendUint32(b, segments)
		b = le.AppendUint64(b, x.current)
		b = le.AppendUint64(b, x.size)
		b = le.AppendUint64(b, x.count)
	}
	return b
}

// metadata applies a metadata-plane command. Rejections are committed in
// a result section; malformed bodies and range errors are denied in the
// status, as the real server does before replicating.
func (s *Server) metadata(op uint8, body []byte) (uint32, [][]byte) {
	return metadataOps[op].run(s, body)
}

func (s *Server) createStream(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	name := rd.Name()
	if rd.Failed() || !nameOK(name) {
		return wire.StatusInvalidCommand, nil
	}
	if rd.Len() != 0 {
		return statusUnsupportedOptionKey, nil // streams accept no options yet
	}
	if _, ok := s.cat.stream(ident{kind: 2, name: name}); ok {
		return wire.StatusOK, one(result(wire.StatusStreamNameExists))
	}
	s.cat.mu.Lock()
	st := s.cat.addStream(name, nowMicros())
	s.cat.mu.Unlock()
	return wire.StatusOK, [][]byte{resultOK, appendStream(nil, st, 0, 0, 0)}
}

func (s *Server) deleteStream(body []byte) (uint32, [][]byte) {
	id, ok := streamBody(body)
	if !ok {
		return wire.StatusInvalidCommand, nil
	}
	st, ok := s.cat.stream(id)
	if !ok {
		return wire.StatusOK, one(result(wire.StatusStreamIDNotFound))
	}
	if err := s.cat.deleteStream(st); err != nil {
		return wire.StatusError, nil
	}
	return wire.StatusOK, one(resultOK)
}

// createTopic checks in the real server's order: the body (3), the
// options (4041, 4042), segment and preallocation bounds (4042), the
// partition count (2015) and the topic size floor (1019), all denied in
// the status; then, committed in a result section, a missing stream
// (1009) and a taken name (2013).
func (s *Server) createTopic(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	sid, ok := readIdent(rd)
	n := rd.U32()
	name := rd.Name()
	if !ok || rd.Failed() || !nameOK(name) || !identOK(sid) {
		return wire.StatusInvalidCommand, nil
	}
	opts, code := parseOptions(rd.Rest(), isCatalogKey)
	if code != 0 {
		return code, nil
	}
	if code := opts.checkCreate(n); code != 0 {
		return code, nil
	}
	st, ok := s.cat.stream(sid)
	if !ok {
		return wire.StatusOK, one(result(wire.StatusStreamIDNotFound))
	}
	if _, err := s.store.Topic(ctx(), st.name, name); err == nil {
		return wire.StatusOK, one(result(wire.StatusTopicNameExists))
	}
	t, err := s.store.CreateTopic(ctx(), st.name, name, int32(max(n, 1)))
	switch {
	case errors.Is(err, bridge.ErrTopicExists):
		return wire.StatusOK, one(result(wire.StatusTopicNameExists))
	case err != nil:
		return wire.StatusError, nil
	}
	if n == 0 {
		// Iggy allows a topic without partitions; the Store needs one
		// at creation, so it is taken away again.
		rs, ok := s.store.(PartitionStore)
		if !ok {
			return wire.StatusError, nil
		}
		if t, err = rs.SetPartitions(ctx(), st.name, name, 0); err != nil {
			return wire.StatusError, nil
		}
	}
	s.cat.mu.Lock()
	m := s.cat.topicMetaLocked(st.name, t)
	m.opts = opts.createdOptions()
	m.compression = compressionNone
	if opts.compression != nil {
		m.compression = *opts.compression
	}
	m.expiry, m.maxSize, m.segment = orU64(opts.expiry, math.MaxUint64), orU64(opts.maxSize, math.MaxUint64), opts.segmentOrDefault
	s.cat.mu.Unlock()
	return wire.StatusOK, [][]byte{resultOK, s.appendTopic(nil, st, t, 0)}
}

// identOK: a named identifier must be UTF-8 to decode.
func identOK(id ident) bool { return id.kind != 2 || isUTF8(id.name) }

// PartitionStore is a bridge.Backend that can also change a topic's
// partition count and name (the embedded store can). Over one, iggytest
// serves CreatePartitions, DeletePartitions, topics without partitions and
// UpdateTopic renames; over another it answers them with status 5.
type PartitionStore interface {
	bridge.Backend
	SetPartitions(ctx context.Context, stream, topic string, n int32) (bridge.TopicInfo, error)
	RenameTopic(ctx context.Context, stream, from, to string) (bridge.TopicInfo, error)
}

// updateTopic renames a topic and patches its options. Admission: the
// body (3), a key outside the three updatable ones (4041), a bad value
// (4042), max_topic_size under the topic's segment size (1019). Then,
// committed: missing stream (1009), missing topic (2010), a name another
// topic has (2013). Entries are stored as the client sent them.
func (s *Server) updateTopic(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	sid, tid, ok := readTopicIdents(rd)
	name := rd.Name()
	if !ok || rd.Failed() || !nameOK(name) || !identOK(sid) || !identOK(tid) {
		return wire.StatusInvalidCommand, nil
	}
	opts, code := parseOptions(rd.Rest(), isUpdatableKey)
	if code != 0 {
		return code, nil
	}
	st, t, status := s.cat.resolve(sid, tid)
	if opts.maxSize != nil {
		segment := uint64(defaultSegment)
		if status == wire.StatusOK {
			segment = s.cat.metaOf(st.name, t).segment
		}
		if *opts.maxSize < segment {
			return statusInvalidTopicSize, nil
		}
	}
	if status != wire.StatusOK {
		return wire.StatusOK, one(result(status))
	}
	if name != t.Name {
		if _, err := s.store.Topic(ctx(), st.name, name); err == nil {
			return wire.StatusOK, one(result(wire.StatusTopicNameExists))
		}
		rs, ok := s.store.(PartitionStore)
		if !ok {
			return statusFeatureUnavailable, nil
		}
		if _, err := rs.RenameTopic(ctx(), st.name, t.Name, name); err != nil {
			if errors.Is(err, bridge.ErrTopicExists) {
				return wire.StatusOK, one(result(wire.StatusTopicNameExists))
			}
			return wire.StatusError, nil
		}
		s.cat.renameTopic(st.name, t.Name, name)
		t.Name = name
	}
	s.cat.mu.Lock()
	m := s.cat.topicMetaLocked(st.name, t)
	for _, k := range opts.order {
		m.opts[k] = opts.raw[k]
	}
	if opts.compression != nil {
		m.compression = *opts.compression
	}
	if opts.expiry != nil {
		m.expiry = *opts.expiry
	}
	if opts.maxSize != nil {
		m.maxSize = *opts.maxSize
	}
	s.cat.mu.Unlock()
	return wire.StatusOK, one(resultOK)
}

// changePartitions serves CreatePartitions and DeletePartitions: a count
// of 0 or over 1000 is denied with 2015; then, committed: missing stream
// (1009) or topic (2010), and deleting more partitions than exist (2019).
// Partitions are added at the end and removed from the end, with their
// messages; the topic's message count keeps what the removed ones held,
// as the real server's does.
func (s *Server) changePartitions(op uint8, body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	sid, tid, ok := readTopicIdents(rd)
	n := rd.U32()
	if !ok || rd.Failed() || rd.Len() != 0 || !identOK(sid) || !identOK(tid) {
		return wire.StatusInvalidCommand, nil
	}
	if n == 0 || n > 1000 {
		return wire.StatusTooManyPartitions, nil
	}
	st, t, status := s.cat.resolve(sid, tid)
	if status != wire.StatusOK {
		return wire.StatusOK, one(result(status))
	}
	rs, ok := s.store.(PartitionStore)
	if !ok {
		return statusFeatureUnavailable, nil
	}
	want := int64(t.Partitions) + int64(n)
	if op == wire.OpDeletePartitions {
		want = int64(t.Partitions) - int64(n)
		if want < 0 {
			return wire.StatusOK, one(result(statusPartitionsTooMany))
		}
		ps := s.partStats(st, t)
		var msgs, size uint64
		for _, p := range ps[want:] {
			msgs, size = msgs+p.count, size+p.size
		}
		s.cat.mu.Lock()
		m := s.cat.topicMetaLocked(st.name, t)
		m.carriedMsgs += msgs
		m.carriedSize += size
		for p := uint32(want); p < uint32(t.Partitions); p++ {
			delete(s.cat.sizes, partKey{st.name, t.Name, p})
		}
		s.cat.mu.Unlock()
	}
	if want > 1000 {
		return wire.StatusTooManyPartitions, nil
	}
	if _, err := rs.SetPartitions(ctx(), st.name, t.Name, int32(want)); err != nil {
		return wire.StatusError, nil
	}
	return wire.StatusOK, one(resultOK)
}

var knownTopicOption = map[string]bool{
	"compression_algorithm": true, "message_expiry": true, "max_topic_size": true, "segment_size": true,
	"enforce_fsync": true, "messages_required_to_save": true, "size_of_messages_required_to_save": true,
	"preallocate_segments": true,
}

func (s *Server) deleteTopic(body []byte) (uint32, [][]byte) {
	sid, tid, ok := topicBody(body)
	if !ok {
		return wire.StatusInvalidCommand, nil
	}
	st, t, status := s.cat.resolve(sid, tid)
	if status != wire.StatusOK {
		return wire.StatusOK, one(result(status))
	}
	if err := s.store.DeleteTopic(ctx(), st.name, t.Name); err != nil {
		if errors.Is(err, bridge.ErrTopicNotFound) {
			return wire.StatusOK, one(result(wire.StatusTopicIDNotFound))
		}
		return wire.StatusError, nil
	}
	s.cat.forgetTopic(st.name, t.Name)
	return wire.StatusOK, one(resultOK)
}
