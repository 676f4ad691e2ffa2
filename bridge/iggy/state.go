package iggy

// The state topics. What Iggy has no place for, the gateway keeps in
// topics of its own stream (Options.StateStream), one partition each, one
// message per record: producer-id marks (producers.go), log starts
// (admin.go), topic and group configs (configs.go), the group log
// (group_log.go) and the security log (security.go). Each of those files
// says its record layout and how it folds the records; appendState and
// replayState are the only code that writes and reads them.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// stateTopic is one topic of the state stream.
type stateTopic struct {
	name string // the topic's name in the state stream
	what string // what it holds, for errors: "iggy: reading the <what>"
	// resend: a send whose connection broke (outcome unknown) is sent
	// once more. Only where a record stored twice reads as once.
	resend bool
}

// stateMsg is one message of an append to a state topic.
type stateMsg struct {
	// id is the Iggy message id. With timeID, appendState writes the
	// append's time (µs since the epoch, u64 LE) into its first 8 bytes,
	// and the rest tells the messages of one time apart.
	id      [16]byte
	timeID  bool
	payload []byte
}

// stateReadBytes is the byte budget of one poll of a replay: what a
// replay holds in memory at once, however long the topic.
const stateReadBytes = 1 << 20

// appendState sends msgs to t as one Iggy batch, creating the state
// stream and t on first use (with Options.Durability, as every topic the
// Store makes), and returns the offset of the first. It returns once the
// server stored them: durable as the topic's durability makes a send.
// Any goroutine; ctx bounds every call to the server.
func (s *Store) appendState(ctx context.Context, t *stateTopic, msgs ...stateMsg) (uint64, error) {
	size := bridge.BatchHeaderSize
	for i := range msgs {
		size += bridge.MessageHeaderSize + len(msgs[i].payload)
	}
	var bb bridge.IggyBatchBuilder
	now := uint64(time.Now().UnixMicro())
	buf := bb.Begin(make([]byte, 0, size), now)
	for i := range msgs {
		id := msgs[i].id
		if msgs[i].timeID {
			le.PutUint64(id[:], now)
		}
		var err error
		if buf, err = bb.Append(buf, id, now, msgs[i].payload, nil); err != nil {
			return 0, err
		}
	}
	buf, err := bb.Finish(buf)
	if err != nil {
		return 0, err
	}
	st := s.c.opts.StateStream
	off, err := s.Append(ctx, st, t.name, 0, buf)
	if t.resend && brokenConn(err) && ctx.Err() == nil {
		off, err = s.Append(ctx, st, t.name, 0, buf)
	}
	if errors.Is(err, bridge.ErrTopicNotFound) {
		if _, cerr := s.CreateTopic(ctx, st, t.name, 1); cerr != nil && !errors.Is(cerr, ErrTopicExists) && !errors.Is(cerr, bridge.ErrTopicExists) {
			return 0, fmt.Errorf("iggy: creating the %s: %w", t.what, cerr)
		}
		off, err = s.Append(ctx, st, t.name, 0, buf)
	}
	if err != nil {
		return 0, fmt.Errorf("iggy: appending to the %s: %w", t.what, err)
	}
	return off, nil
}

// replayState calls fn, in order, with the payload of every message of t
// at offset from or later, up to the end of t as the last poll found it,
// and returns the offset after the last message fn was given (from when
// none). It returns that offset on an error too: fn has seen everything
// below it, so a caller that keeps it reads on from there. A missing
// state stream or topic is an empty topic. payload is valid only during
// fn. Any goroutine; the caller serializes replays that share an offset.
func (s *Store) replayState(ctx context.Context, t *stateTopic, from uint64, fn func(payload []byte)) (uint64, error) {
	for {
		start := from
		var bad error
		err := s.Poll(ctx, s.c.opts.StateStream, t.name, 0, from, stateReadBytes, func(b []byte) bool {
			v, err := bridge.ParseIggyBatch(b)
			if err != nil {
				bad = err
				return false
			}
			it := bridge.NewIggyMessageIter(v)
			for it.Next() {
				m := it.Message()
				if m.Offset < from {
					continue // the poll starts at the batch holding from
				}
				from = m.Offset + 1
				fn(m.Payload)
			}
			return true
		})
		switch {
		case errors.Is(err, bridge.ErrTopicNotFound), errors.Is(err, ErrStreamNotFound), errors.Is(err, ErrTopicNotFound):
			return from, nil
		case err != nil:
			return from, fmt.Errorf("iggy: reading the %s: %w", t.what, err)
		case bad != nil:
			return from, fmt.Errorf("iggy: reading the %s: %w", t.what, bad)
		case from == start:
			return from, nil
		}
	}
}
