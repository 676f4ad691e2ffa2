package iggy

// The gateway's security log (bridge.SecurityLog: Kafka ACL bindings and
// SCRAM credentials, docs/SECURITY.md) is the state-stream topic
// SecurityTopic, one partition, one message per record (bridge/security.go
// has the layout); a record's position is its Iggy offset. Gateways sharing
// the server share it, so an ACL made through one is enforced by all once
// they have read it (the handlers re-read at most once a second).

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// SecurityTopic is the state-stream topic holding the security log.
const SecurityTopic = "security"

// AppendSecurityRecord implements bridge.SecurityLog, creating the topic
// on first use. Durable as the server's fsync setting makes a send.
func (s *Store) AppendSecurityRecord(ctx context.Context, rec []byte) error {
	var bb bridge.IggyBatchBuilder
	now := uint64(time.Now().UnixMicro())
	buf := bb.Begin(make([]byte, 0, bridge.BatchHeaderSize+bridge.MessageHeaderSize+len(rec)), now)
	var id [16]byte
	_, _ = rand.Read(id[:])
	buf, err := bb.Append(buf, id, now, rec, nil)
	if err == nil {
		buf, err = bb.Finish(buf)
	}
	if err != nil {
		return err
	}
	_, err = s.Append(ctx, s.c.opts.StateStream, SecurityTopic, 0, buf)
	if errors.Is(err, bridge.ErrTopicNotFound) {
		if _, cerr := s.CreateTopic(ctx, s.c.opts.StateStream, SecurityTopic, 1); cerr != nil && !errors.Is(cerr, ErrTopicExists) && !errors.Is(cerr, bridge.ErrTopicExists) {
			return cerr
		}
		_, err = s.Append(ctx, s.c.opts.StateStream, SecurityTopic, 0, buf)
	}
	return err
}

// ReadSecurityRecords implements bridge.SecurityLog: an empty log while
// the state stream or the topic does not exist.
func (s *Store) ReadSecurityRecords(ctx context.Context, from uint64, fn func(rec []byte)) (uint64, error) {
	for {
		start := from
		var bad error
		err := s.Poll(ctx, s.c.opts.StateStream, SecurityTopic, 0, from, 1<<20, func(b []byte) bool {
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
				from = m.Offset + 1
				fn(m.Payload)
			}
			return true
		})
		switch {
		case errors.Is(err, bridge.ErrTopicNotFound), errors.Is(err, ErrStreamNotFound), errors.Is(err, ErrTopicNotFound):
			return from, nil
		case err != nil:
			return start, err
		case bad != nil:
			return start, fmt.Errorf("iggy: security log: %w", bad)
		case from == start:
			return from, nil
		}
	}
}
