package embedded

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

// The producer-id high-water mark of each gateway instance
// (docs/IDEMPOTENCE.md) lives under its own prefix:
//
//	'p' u16 BE instance -> u64 BE mark
const prefixProducerMark = 'p'

func producerMarkKey(instance uint16) []byte {
	return []byte{prefixProducerMark, byte(instance >> 8), byte(instance)}
}

// LoadProducerIDMark returns the stored mark of instance, 0 when none.
func (s *Store) LoadProducerIDMark(ctx context.Context, instance uint16) (uint64, error) {
	if err := s.enterRead(); err != nil {
		return 0, err
	}
	defer s.ops.RUnlock()
	v, closer, err := s.db.Get(producerMarkKey(instance))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: read producer id mark: %w", bridge.ErrUnavailable, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("embedded: producer id mark of instance %d is %d bytes", instance, len(v))
	}
	return be.Uint64(v), nil
}

// StoreProducerIDMark raises the stored mark of instance to mark with an
// fsync, whatever the sync policy: a lost mark could reissue ids. Callers
// serialise their own calls (one allocator per instance), so the read and
// the write need no lock of their own.
func (s *Store) StoreProducerIDMark(ctx context.Context, instance uint16, mark uint64) error {
	cur, err := s.LoadProducerIDMark(ctx, instance)
	if err != nil || mark <= cur {
		return err
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	if err := s.db.Set(producerMarkKey(instance), be.AppendUint64(nil, mark), pebble.Sync); err != nil {
		return fmt.Errorf("%w: write producer id mark: %w", bridge.ErrUnavailable, err)
	}
	return nil
}
