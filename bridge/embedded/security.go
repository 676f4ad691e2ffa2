package embedded

// The gateway's security log (bridge.SecurityLog: ACL bindings, SCRAM
// credentials) lives under its own prefix, one key per record:
//
//	's' u64 BE position -> record bytes
//
// Positions start at 0 and grow by one per record, so a read from a
// position is one range scan. Appends always fsync, whatever the sync
// policy: an ACL change or a new password must not be lost to a crash
// after it was acknowledged.

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

const prefixSecurity = 's'

func securityKey(pos uint64) []byte { return be.AppendUint64([]byte{prefixSecurity}, pos) }

// AppendSecurityRecord implements bridge.SecurityLog. Any goroutine.
func (s *Store) AppendSecurityRecord(ctx context.Context, rec []byte) error {
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	s.secMu.Lock()
	defer s.secMu.Unlock()
	next, err := s.securityEnd()
	if err != nil {
		return err
	}
	if err := s.db.Set(securityKey(next), rec, pebble.Sync); err != nil {
		return fmt.Errorf("%w: write security record: %w", bridge.ErrUnavailable, err)
	}
	return nil
}

// securityEnd is the position after the last record. Caller holds ops.
func (s *Store) securityEnd() (uint64, error) {
	lo := []byte{prefixSecurity}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return 0, fmt.Errorf("%w: security log: %w", bridge.ErrUnavailable, err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	k := it.Key()
	if len(k) != 9 {
		return 0, errCorrupt
	}
	return be.Uint64(k[1:]) + 1, nil
}

// ReadSecurityRecords implements bridge.SecurityLog. Any goroutine.
func (s *Store) ReadSecurityRecords(ctx context.Context, from uint64, fn func(rec []byte)) (uint64, error) {
	if err := s.enterRead(); err != nil {
		return from, err
	}
	defer s.ops.RUnlock()
	lo := securityKey(from)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd([]byte{prefixSecurity})})
	if err != nil {
		return from, fmt.Errorf("%w: security log: %w", bridge.ErrUnavailable, err)
	}
	defer it.Close()
	next := from
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return from, err
		}
		k := it.Key()
		if len(k) != 9 {
			return from, errCorrupt
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return from, fmt.Errorf("%w: security log: %w", bridge.ErrUnavailable, err)
		}
		fn(v)
		next = be.Uint64(k[1:]) + 1
	}
	if err := it.Error(); err != nil {
		return from, fmt.Errorf("%w: security log: %w", bridge.ErrUnavailable, err)
	}
	return next, nil
}
