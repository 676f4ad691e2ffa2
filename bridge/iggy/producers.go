package iggy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

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

// LoadProducerIDMark returns the highest mark stored for instance, 0 when
// none is (or the state stream does not exist yet).
func (s *Store) LoadProducerIDMark(ctx context.Context, instance uint16) (uint64, error) {
	var mark uint64
	var bad error
	from := uint64(0)
	for {
		next := from
		err := s.Poll(ctx, s.c.opts.StateStream, ProducerIDTopic, 0, from, 1<<20, func(b []byte) bool {
			v, err := bridge.ParseIggyBatch(b)
			if err != nil {
				bad = err
				return false
			}
			it := bridge.NewIggyMessageIter(v)
			for it.Next() {
				m := it.Message()
				if m.Offset < from {
					continue
				}
				next = m.Offset + 1
				p := m.Payload
				if len(p) == markPayloadLen && p[0] == 'M' && le.Uint16(p[1:]) == instance {
					mark = max(mark, le.Uint64(p[3:]))
				}
			}
			return true
		})
		switch {
		case errors.Is(err, bridge.ErrTopicNotFound), errors.Is(err, ErrStreamNotFound), errors.Is(err, ErrTopicNotFound):
			return 0, nil
		case err != nil:
			return 0, err
		case bad != nil:
			return 0, fmt.Errorf("iggy: producer id marks: %w", bad)
		case next == from:
			return mark, nil
		}
		from = next
	}
}

// StoreProducerIDMark appends mark for instance to the marks topic,
// creating the stream and topic on first use. Durable as the server's
// fsync setting makes a send; readers take the maximum, so a lower mark
// is harmless.
func (s *Store) StoreProducerIDMark(ctx context.Context, instance uint16, mark uint64) error {
	var bb bridge.IggyBatchBuilder
	now := uint64(time.Now().UnixMicro())
	buf := bb.Begin(make([]byte, 0, bridge.BatchHeaderSize+bridge.MessageHeaderSize+markPayloadLen), now)
	payload := make([]byte, 0, markPayloadLen)
	payload = append(payload, 'M')
	payload = le.AppendUint16(payload, instance)
	payload = le.AppendUint64(payload, mark)
	var id [16]byte
	le.PutUint64(id[:], mark)
	le.PutUint16(id[8:], instance)
	buf, err := bb.Append(buf, id, now, payload, nil)
	if err == nil {
		buf, err = bb.Finish(buf)
	}
	if err != nil {
		return err
	}
	_, err = s.Append(ctx, s.c.opts.StateStream, ProducerIDTopic, 0, buf)
	if errors.Is(err, bridge.ErrTopicNotFound) {
		if _, cerr := s.CreateTopic(ctx, s.c.opts.StateStream, ProducerIDTopic, 1); cerr != nil && !errors.Is(cerr, ErrTopicExists) && !errors.Is(cerr, bridge.ErrTopicExists) {
			return cerr
		}
		_, err = s.Append(ctx, s.c.opts.StateStream, ProducerIDTopic, 0, buf)
	}
	return err
}
