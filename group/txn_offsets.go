package group

import (
	"context"
	"errors"

	"github.com/iggy-kafka/gateway/bridge"
)

// TxnCommitCheck is the membership check of a TxnOffsetCommit (KIP-447:
// v3+ carries the member id, generation and instance id; before it they
// are empty and -1, and any commit passes), as OffsetCommit makes it. 0
// means the offsets may be held for the transaction. Any goroutine.
func (co *Coordinator) TxnCommitCheck(group, memberID string, instance *string, generation int32, version int16) int16 {
	if code := co.groupCode(group); code != 0 {
		return code
	}
	in := ""
	if instance != nil {
		in = *instance
	}
	// TxnOffsetCommit v3 is the generation rules of OffsetCommit v7.
	return co.commitCheck(group, memberID, in, generation, version+4)
}

// ApplyTxnOffsets stores a committed transaction's offsets for group, as
// an OffsetCommit would without its membership check (made when they were
// sent). Any goroutine.
func (co *Coordinator) ApplyTxnOffsets(ctx context.Context, group string, offs []bridge.GroupOffset) error {
	var errs []error
	for _, err := range co.store.CommitOffsets(ctx, co.stream, group, offs) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) < len(offs) && co.groupCode(group) == 0 {
		// Listed from now on, here where it is coordinated (in cluster
		// mode a transaction's coordinator may be another gateway).
		co.noteCommitted(group)
	}
	return errors.Join(errs...)
}
