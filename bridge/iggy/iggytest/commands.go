package iggytest

import (
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

// read serves a NonReplicated command after login.
func (s *Server) read(code uint32, body []byte) (uint32, [][]byte) {
	switch code {
	case wire.CodeGetStream:
		return s.getStream(body)
	case wire.CodeGetTopic:
		return s.getTopic(body)
	case wire.CodeGetTopics:
		return s.getTopics(body)
	case wire.CodePollMessages:
		return s.poll(body)
	case wire.CodeGetConsumerOffset:
		return s.getOffset(body)
	}
	return wire.StatusInvalidCommand, nil
}

// one wraps a single payload part.
func one(b []byte) [][]byte { return [][]byte{b} }

func (s *Server) getStream(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	id, ok := readIdent(rd)
	if !ok || rd.Len() != 0 {
		return wire.StatusInvalidCommand, nil
	}
	st, ok := s.cat.stream(id)
	if !ok {
		return wire.StatusOK, nil // not found: empty body
	}
	ts, err := s.store.Topics(ctx(), st.name)
	if err != nil {
		return wire.StatusError, nil
	}
	b := appendStream(nil, st, uint32(len(ts)))
	for _, t := range ts {
		b = s.appendTopicHeader(b, st, t)
	}
	return wire.StatusOK, one(b)
}

func (s *Server) getTopic(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	sid, ok1 := readIdent(rd)
	tid, ok2 := readIdent(rd)
	if !ok1 || !ok2 || rd.Len() != 0 {
		return wire.StatusInvalidCommand, nil
	}
	st, t, status := s.cat.resolve(sid, tid)
	if status != wire.StatusOK {
		return wire.StatusOK, nil // not found: empty body
	}
	return wire.StatusOK, one(s.appendTopic(nil, st, t))
}

func (s *Server) getTopics(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	sid, ok := readIdent(rd)
	if !ok || rd.Len() != 0 {
		return wire.StatusInvalidCommand, nil
	}
	st, ok := s.cat.stream(sid)
	if !ok {
		return wire.StatusOK, one(le.AppendUint32(nil, 0))
	}
	ts, err := s.store.Topics(ctx(), st.name)
	if err != nil {
		return wire.StatusError, nil
	}
	b := le.AppendUint32(nil, uint32(len(ts)))
	for _, t := range ts {
		b = s.appendTopicHeader(b, st, t)
	}
	return wire.StatusOK, one(b)
}

// appendStream writes a stream record (PROTOCOL.md 6.7).
func appendStream(b []byte, st *stream, topics uint32) []byte {
	b = le.AppendUint32(b, st.id)
	b = le.AppendUint64(b, st.created)
	b = le.AppendUint32(b, topics)
	b = le.AppendUint64(b, 0) // size: not tracked
	b = le.AppendUint64(b, 0) // messages: not tracked
	b = append(b, byte(len(st.name)))
	b = append(b, st.name...)
	return le.AppendUint32(b, 0) // no options
}

// appendTopicHeader writes a topic header (PROTOCOL.md 6.8) with
// server-default settings.
func (s *Server) appendTopicHeader(b []byte, st *stream, t bridge.TopicInfo) []byte {
	var msgs uint64
	for p := range uint32(max(t.Partitions, 0)) {
		_, n, _ := s.cat.partitionStats(st, t, p)
		msgs += n
	}
	b = le.AppendUint32(b, t.ID)
	b = le.AppendUint64(b, t.CreatedAt)
	b = le.AppendUint32(b, uint32(t.Partitions))
	b = le.AppendUint64(b, math.MaxUint64) // message expiry: never
	b = append(b, 1)                       // compression: none
	b = le.AppendUint64(b, math.MaxUint64) // max size: unlimited
	b = le.AppendUint64(b, 0)              // size: not tracked
	b = le.AppendUint64(b, msgs)
	b = append(b, byte(len(t.Name)))
	b = append(b, t.Name...)
	b = le.AppendUint32(b, 0) // explicit options
	return le.AppendUint32(b, 0)
}

// appendTopic writes a topic header and its 40-byte partition records.
func (s *Server) appendTopic(b []byte, st *stream, t bridge.TopicInfo) []byte {
	b = s.appendTopicHeader(b, st, t)
	for p := range uint32(max(t.Partitions, 0)) {
		cur, n, _ := s.cat.partitionStats(st, t, p)
		b = le.AppendUint32(b, p)
		b = le.AppendUint64(b, t.CreatedAt)
		b = le.AppendUint32(b, 1) // segments
		b = le.AppendUint64(b, cur)
		b = le.AppendUint64(b, 0) // size: not tracked
		b = le.AppendUint64(b, n)
	}
	return b
}

// metadata applies a metadata-plane command. Rejections are committed in
// a result section; malformed bodies and range errors are denied in the
// status, as the real server does before replicating.
func (s *Server) metadata(op uint8, body []byte) (uint32, [][]byte) {
	switch op {
	case wire.OpCreateStream:
		return s.createStream(body)
	case wire.OpDeleteStream:
		return s.deleteStream(body)
	case wire.OpCreateTopic:
		return s.createTopic(body)
	case wire.OpDeleteTopic:
		return s.deleteTopic(body)
	case wire.OpCreatePartitions, wire.OpDeletePartitions:
		return statusFeatureUnavailable, nil // a bridge.Store cannot change partitions
	}
	return wire.StatusInvalidCommand, nil
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
	return wire.StatusOK, [][]byte{resultOK, appendStream(nil, st, 0)}
}

func (s *Server) deleteStream(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	id, ok := readIdent(rd)
	if !ok || rd.Len() != 0 {
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

func (s *Server) createTopic(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	sid, ok := readIdent(rd)
	n := rd.U32()
	name := rd.Name()
	if !ok || rd.Failed() || !nameOK(name) {
		return wire.StatusInvalidCommand, nil
	}
	if code := checkTopicOptions(rd.Rest()); code != wire.StatusOK {
		return code, nil
	}
	if n > 1000 {
		return wire.StatusTooManyPartitions, nil
	}
	st, ok := s.cat.stream(sid)
	if !ok {
		return wire.StatusOK, one(result(wire.StatusStreamIDNotFound))
	}
	t, err := s.store.CreateTopic(ctx(), st.name, name, int32(n))
	switch {
	case errors.Is(err, bridge.ErrTopicExists):
		return wire.StatusOK, one(result(wire.StatusTopicNameExists))
	case err != nil:
		return wire.StatusError, nil
	}
	return wire.StatusOK, [][]byte{resultOK, s.appendTopic(nil, st, t)}
}

// checkTopicOptions accepts a create-time options block of known keys
// (PROTOCOL.md 5.6); the values are not kept, so replies carry no options.
func checkTopicOptions(block []byte) uint32 {
	it := bridge.NewUserHeaderIter(block)
	for it.Next() {
		if it.KeyKind() != bridge.KindString || !knownTopicOption[string(it.Key())] {
			return statusUnsupportedOptionKey
		}
	}
	if it.Err() != nil {
		return statusUnsupportedOptionKey
	}
	return wire.StatusOK
}

var knownTopicOption = map[string]bool{
	"compression_algorithm": true, "message_expiry": true, "max_topic_size": true, "segment_size": true,
	"enforce_fsync": true, "messages_required_to_save": true, "size_of_messages_required_to_save": true,
	"preallocate_segments": true,
}

func (s *Server) deleteTopic(body []byte) (uint32, [][]byte) {
	rd := wire.NewReader(body)
	sid, ok1 := readIdent(rd)
	tid, ok2 := readIdent(rd)
	if !ok1 || !ok2 || rd.Len() != 0 {
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
	return wire.StatusOK, one(resultOK)
}
