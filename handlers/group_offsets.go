package handlers

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// Committed offsets live in the Store (bridge.GroupOffsets), so they survive
// a restart; this file holds what the offset keys share: finding the
// offsets API and turning its errors into Kafka codes.

// maxOffsetMetadata is Kafka's offset.metadata.max.bytes default; longer
// commit metadata gets OFFSET_METADATA_TOO_LARGE.
const maxOffsetMetadata = 4096

// groupOffsets returns the store's committed-offset API, or nil when the
// store keeps none (then every offset key answers COORDINATOR_NOT_AVAILABLE).
func (g *Gateway) groupOffsets() bridge.GroupOffsets {
	o, _ := g.Store.(bridge.GroupOffsets)
	return o
}

// offsetErrCode maps a GroupOffsets error to a Kafka code for OffsetCommit,
// OffsetFetch, OffsetDelete and DeleteGroups. Transient failures are
// COORDINATOR_NOT_AVAILABLE, which every client retries after finding the
// coordinator again; a deadline is REQUEST_TIMED_OUT.
func offsetErrCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, bridge.ErrTopicNotFound), errors.Is(err, bridge.ErrPartitionNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, bridge.ErrOffsetNotStorable):
		return kerr.InvalidCommitOffsetSize.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, bridge.ErrUnavailable), errors.Is(err, bridge.ErrClosed):
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.UnknownServerError.Code
}

// groupHasOffsets reports whether the store holds committed offsets of
// group (a group with no live members still exists for the admin keys
// when it has some).
func (g *Gateway) groupHasOffsets(ctx context.Context, group string) (bool, error) {
	st := g.groupOffsets()
	if st == nil || !validGroupID(group) {
		return false, nil
	}
	offs, err := st.GroupOffsets(ctx, g.Cfg.Stream, group)
	return len(offs) > 0, err
}
