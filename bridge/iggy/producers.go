package iggy

import "context"

// The producer-id high-water marks (docs/IDEMPOTENCE.md) live on the Iggy
// server itself, so they survive as long as the data does: stream
// the state stream (Options.StateStream), topic ProducerIDTopic, one partition, one message per
// reservation whose payload is
//
//	'M' u16 LE instance, u64 LE mark
//
// A gateway reserves a block of 65 536 ids per message, so the topic grows
// by one small message per restart and per block; Load reads it whole.
const (
	ProducerIDTopic = "producer-ids"
)

const markPayloadLen = 1 + 2 + 8

var producerIDState = stateTopic{name: ProducerIDTopic, what: "producer id marks"}

// LoadProducerIDMark returns the highest mark stored for instance, 0 when
// none is (or the state stream does not exist yet).
func (s *Store) LoadProducerIDMark(ctx context.Context, instance uint16) (uint64, error) {
	var mark uint64
	_, err := s.replayState(ctx, &producerIDState, 0, func(p []byte) {
		if len(p) == markPayloadLen && p[0] == 'M' && le.Uint16(p[1:]) == instance {
			mark = max(mark, le.Uint64(p[3:]))
		}
	})
	if err != nil {
		return 0, err
	}
	return mark, nil
}

// StoreProducerIDMark appends mark for instance to the marks topic,
// creating the stream and topic on first use. Durable as the server's
// fsync setting makes a send; readers take the maximum, so a lower mark
// is harmless.
func (s *Store) StoreProducerIDMark(ctx context.Context, instance uint16, mark uint64) error {
	payload := make([]byte, 0, markPayloadLen)
	payload = append(payload, 'M')
	payload = le.AppendUint16(payload, instance)
	payload = le.AppendUint64(payload, mark)
	var id [16]byte
	le.PutUint64(id[:], mark)
	le.PutUint16(id[8:], instance)
	_, err := s.appendState(ctx, &producerIDState, stateMsg{id: id, payload: payload})
	return err
}
