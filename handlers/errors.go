package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/share"
)

// This file holds the rules every handler shares: how a Store or mapping
// error becomes a Kafka error code, what a valid topic name is, and how a
// topic id is derived. One place, so two keys cannot answer the same failure
// differently by accident.

// op says what a failed store call was doing; transient failures are
// answered with the code the clients of that API retry on.
type op uint8

const (
	// opWrite: Produce. The Java producer retries 6 and 7 alike; 7 says
	// the write may have happened, 6 makes it refresh metadata first.
	opWrite op = iota
	// opRead: Fetch. The Java consumer handles a short list of partition
	// codes and throws IllegalStateException on any other, so every
	// transient failure is 6 (NOT_LEADER_OR_FOLLOWER), which it retries
	// after a metadata refresh.
	opRead
	// opOffsets: ListOffsets. Retriable codes are retried generically.
	opOffsets
	// opMeta: Metadata, per topic. LEADER_NOT_AVAILABLE makes every client
	// retry the metadata request.
	opMeta
	// opAdmin: CreateTopics, DeleteTopics. The admin client surfaces the
	// error to the caller; 7 says "try again".
	opAdmin
)

// errCode maps an error from a bridge.Backend, the bridge mapping or codec to a
// Kafka error code for an API doing o. nil maps to 0. Any goroutine.
func errCode(err error, o op) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errAutoCreateLimited):
		return kerr.LeaderNotAvailable.Code // retried by every client, as while Kafka creates a topic
	case errors.Is(err, errTopicCollides):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, kerr.TransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, share.ErrNotLeader):
		// Cluster mode: the partition (or its share state) moved on.
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, bridge.ErrTopicNotFound), errors.Is(err, bridge.ErrPartitionNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, bridge.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, bridge.ErrNotPermitted):
		// The store refused the gateway's own user (Iggy permissions):
		// the topic is what every op here was acting on.
		return kerr.TopicAuthorizationFailed.Code
	case errors.Is(err, bridge.ErrConfigRefused):
		return kerr.InvalidConfig.Code // the message names the config
	case errors.Is(err, bridge.ErrRecordTooLarge), errors.Is(err, codec.ErrBudget):
		// Over the message cap or the request's decompression budget.
		// The Java producer splits a batch answered with 10 and retries
		// the halves, which is what fits a per-request budget.
		return kerr.MessageTooLarge.Code
	case errors.Is(err, codec.ErrBatchShort), errors.Is(err, codec.ErrBatchCRC):
		// Damaged in transit: CORRUPT_MESSAGE is retriable.
		return kerr.CorruptMessage.Code
	case errors.Is(err, bridge.ErrRecordInvalid), errors.Is(err, bridge.ErrInvalidBatch),
		errors.Is(err, codec.ErrBatchMagic), errors.Is(err, codec.ErrBatchCount),
		errors.Is(err, codec.ErrBatchRecord), errors.Is(err, codec.ErrBatchCompression):
		// The CRC held, so the producer meant these bytes: retrying
		// cannot help. INVALID_RECORD is not retriable.
		return kerr.InvalidRecord.Code
	}
	if errors.Is(err, bridge.ErrStorage) {
		// The store's disk is full or failed (docs/STORAGE.md). Kafka's
		// answer for a broker whose log directory failed: retriable, and
		// the Java producer and consumer refresh metadata and retry.
		switch o {
		case opWrite, opRead, opOffsets:
			return kerr.KafkaStorageError.Code
		case opMeta:
			return kerr.LeaderNotAvailable.Code
		}
	}
	transient := errors.Is(err, bridge.ErrUnavailable) || errors.Is(err, bridge.ErrClosed)
	timeout := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	if !transient && !timeout {
		return kerr.UnknownServerError.Code
	}
	switch o {
	case opWrite:
		if timeout {
			return kerr.RequestTimedOut.Code
		}
		return kerr.NotLeaderForPartition.Code
	case opRead:
		return kerr.NotLeaderForPartition.Code
	case opOffsets:
		if timeout {
			return kerr.RequestTimedOut.Code
		}
		return kerr.NotLeaderForPartition.Code
	case opMeta:
		return kerr.LeaderNotAvailable.Code
	default:
		return kerr.RequestTimedOut.Code
	}
}

// validTopicName is codec.ValidTopicName (the group coordinator checks
// names too). Any goroutine; no allocation.
func validTopicName(name string) bool { return codec.ValidTopicName(name) }

// topicID derives the Kafka topic id of an Iggy topic: a UUID (version 8,
// RFC 9562 variant) from the first 16 bytes of SHA-256 over stream, name and
// the store-assigned topic id. It is stable across restarts and gateways,
// and a topic deleted and created again under the same name gets a new one
// (the embedded store never reuses TopicInfo.ID). Never the zero UUID. Any
// goroutine.
//
// Fetch and Produce v13+ check it per topic per request, so it hashes from
// a stack buffer (no allocation for names of usual length).
func topicID(t bridge.TopicInfo) [16]byte {
	var buf [512]byte
	in := append(buf[:0], t.Stream...)
	in = append(in, 0)
	in = append(in, t.Name...)
	in = append(in, 0)
	in = binary.BigEndian.AppendUint32(in, t.ID)
	sum := sha256.Sum256(in)
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // variant 10
	return id
}

// strp returns a pointer to s (for kmsg's nullable strings).
func strp(s string) *string { return &s }
