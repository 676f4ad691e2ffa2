package iggy

import (
	"errors"
	"fmt"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Sentinel errors. An *Error or *EvictionError matches them with errors.Is,
// and also matches the bridge error it means (see Error.Is), so handlers see
// bridge.ErrTopicNotFound and friends without knowing Iggy's codes.
var (
	ErrNotFound                = errors.New("iggy: not found")
	ErrStreamNotFound          = errors.New("iggy: stream not found")
	ErrTopicNotFound           = errors.New("iggy: topic not found")
	ErrPartitionNotFound       = errors.New("iggy: partition not found")
	ErrConsumerOffsetNotFound  = errors.New("iggy: consumer offset not found")
	ErrResourceNotFound        = errors.New("iggy: stream, topic or partition not found")
	ErrAlreadyExists           = errors.New("iggy: already exists")
	ErrStreamExists            = errors.New("iggy: stream already exists")
	ErrTopicExists             = errors.New("iggy: topic already exists")
	ErrUnauthenticated         = errors.New("iggy: unauthenticated")
	ErrUnauthorized            = errors.New("iggy: unauthorized")
	ErrInvalidCredentials      = errors.New("iggy: invalid credentials")
	ErrInvalidOffset           = errors.New("iggy: invalid offset")
	ErrTransient               = errors.New("iggy: transient failure, retry")
	ErrIncompatibleProtocol    = errors.New("iggy: incompatible protocol version")
	ErrStaleClient             = errors.New("iggy: stale client")
	ErrInvalidRequest          = errors.New("iggy: server rejected the request format")
	ErrProtocol                = errors.New("iggy: protocol violation by server")
	ErrTooManyPartitions       = errors.New("iggy: partition count out of range")
	ErrRequestAlreadyApplied   = errors.New("iggy: request id already applied")
	ErrSendOutcomeUnknown      = errors.New("iggy: send outcome unknown")
	errUnexpectedEmptySendBody = errors.New("iggy: empty send reply (dead session)")
)

// Error is an error code from Iggy: a reply status (denied before commit)
// or a result section entry (committed as a rejection).
type Error struct {
	Code uint32
	// Committed is true when the code came in a result section.
	Committed bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("iggy: %s (code %d)", codeName(e.Code), e.Code)
}

// Is matches the package sentinels and the bridge errors the code means.
func (e *Error) Is(target error) bool {
	for _, t := range codeTargets(e.Code) {
		if t == target {
			return true
		}
	}
	return false
}

// codeTargets lists the sentinels one code matches, most specific first.
func codeTargets(code uint32) []error {
	switch code {
	case wire.StatusStreamIDNotFound, wire.StatusStreamNameNotFound:
		// A topic in a missing stream does not exist either.
		return []error{ErrStreamNotFound, ErrNotFound, bridge.ErrTopicNotFound}
	case wire.StatusTopicIDNotFound, wire.StatusTopicNameNotFound:
		return []error{ErrTopicNotFound, ErrNotFound, bridge.ErrTopicNotFound}
	case wire.StatusPartitionNotFound:
		return []error{ErrPartitionNotFound, ErrNotFound, bridge.ErrPartitionNotFound}
	case wire.StatusResourceNotFound:
		return []error{ErrResourceNotFound, ErrNotFound}
	case wire.StatusConsumerOffsetNotFound:
		return []error{ErrConsumerOffsetNotFound, ErrNotFound}
	case wire.StatusStreamNameExists:
		return []error{ErrStreamExists, ErrAlreadyExists}
	case wire.StatusTopicNameExists:
		return []error{ErrTopicExists, ErrAlreadyExists, bridge.ErrTopicExists}
	case wire.StatusUnauthenticated:
		return []error{ErrUnauthenticated, bridge.ErrUnavailable}
	case wire.StatusUnauthorized:
		return []error{ErrUnauthorized, bridge.ErrNotPermitted}
	case wire.StatusInvalidCredentials:
		return []error{ErrInvalidCredentials}
	case wire.StatusStaleClient:
		return []error{ErrStaleClient, bridge.ErrUnavailable}
	case wire.StatusTransientNotCommitted, wire.StatusTransientNotAccepted:
		return []error{ErrTransient, bridge.ErrUnavailable}
	case wire.StatusRequestAlreadyApplied:
		return []error{ErrRequestAlreadyApplied}
	case wire.StatusInvalidOffset:
		return []error{ErrInvalidOffset}
	case wire.StatusTooManyPartitions:
		return []error{ErrTooManyPartitions}
	case wire.StatusInvalidCommand, wire.StatusInvalidFormat:
		return []error{ErrInvalidRequest}
	case wire.StatusIncompatibleProtocol:
		return []error{ErrIncompatibleProtocol}
	}
	return nil
}

var codeNames = map[uint32]string{
	wire.StatusError:                  "error",
	wire.StatusInvalidCommand:         "invalid command",
	wire.StatusInvalidFormat:          "invalid format",
	5:                                 "feature unavailable",
	6:                                 "invalid identifier",
	wire.StatusResourceNotFound:       "resource not found",
	wire.StatusStaleClient:            "stale client",
	wire.StatusUnauthenticated:        "unauthenticated",
	wire.StatusUnauthorized:           "unauthorized",
	wire.StatusInvalidCredentials:     "invalid credentials",
	wire.StatusTransientNotCommitted:  "transient: not committed",
	wire.StatusTransientNotAccepted:   "transient: not accepted",
	wire.StatusRequestAlreadyApplied:  "request already applied",
	wire.StatusStreamIDNotFound:       "stream not found",
	wire.StatusStreamNameNotFound:     "stream name not found",
	wire.StatusStreamNameExists:       "stream name already exists",
	1019:                              "invalid topic size",
	1020:                              "too many streams",
	wire.StatusTopicIDNotFound:        "topic not found",
	wire.StatusTopicNameNotFound:      "topic name not found",
	wire.StatusTopicNameExists:        "topic name already exists",
	wire.StatusTooManyPartitions:      "too many partitions",
	2019:                              "invalid partitions count",
	2021:                              "too many topics",
	wire.StatusPartitionNotFound:      "partition not found",
	3008:                              "no partitions",
	wire.StatusConsumerOffsetNotFound: "consumer offset not found",
	4039:                              "invalid batch checksum",
	wire.StatusInvalidOffset:          "invalid offset",
	5000:                              "consumer group not found",
	wire.StatusIncompatibleProtocol:   "incompatible protocol version",
}

func codeName(code uint32) string {
	if n, ok := codeNames[code]; ok {
		return n
	}
	return "unknown error"
}

// EvictionError is an Eviction frame: the server ended the session. The
// connection is closed when it arrives.
type EvictionError struct {
	Reason uint8
	// ServerVersion and MinVersion are the accepted protocol window
	// (packed), set only for reason 14.
	ServerVersion, MinVersion uint32
}

var evictionNames = map[uint8]string{
	wire.EvictNoSession:            "no session",
	2:                              "client release too low",
	3:                              "client release too high",
	wire.EvictInvalidRequestOp:     "invalid request operation",
	5:                              "invalid request body",
	6:                              "invalid request body size",
	7:                              "session too low",
	8:                              "session release mismatch",
	wire.EvictInvalidCredentials:   "invalid credentials",
	wire.EvictInvalidToken:         "invalid personal access token",
	wire.EvictUserInactive:         "user inactive",
	wire.EvictSessionError:         "session error",
	wire.EvictStaleClient:          "stale client",
	wire.EvictIncompatibleProtocol: "incompatible protocol",
	wire.EvictMalformedLogin:       "malformed login",
}

func (e *EvictionError) Error() string {
	name := evictionNames[e.Reason]
	if name == "" {
		name = "unknown reason"
	}
	if e.Reason == wire.EvictIncompatibleProtocol {
		return fmt.Sprintf("iggy: evicted (reason %d, %s): client speaks %s, server accepts %s..%s",
			e.Reason, name, versionString(wire.ProtocolVersion), versionString(e.MinVersion), versionString(e.ServerVersion))
	}
	return fmt.Sprintf("iggy: evicted (reason %d, %s)", e.Reason, name)
}

// Is maps reasons as the official Go SDK does, and every eviction to
// bridge.ErrUnavailable: the session is gone, whatever the reason.
func (e *EvictionError) Is(target error) bool {
	if target == bridge.ErrUnavailable {
		return true
	}
	switch e.Reason {
	case wire.EvictInvalidCredentials, wire.EvictInvalidToken:
		return target == ErrInvalidCredentials
	case wire.EvictNoSession, 7, 8, wire.EvictUserInactive, wire.EvictSessionError:
		return target == ErrUnauthenticated
	case wire.EvictStaleClient:
		return target == ErrStaleClient
	case wire.EvictIncompatibleProtocol:
		return target == ErrIncompatibleProtocol
	case wire.EvictMalformedLogin:
		return target == ErrInvalidRequest
	}
	return false
}

func versionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v>>20&0x3ff, v>>10&0x3ff, v&0x3ff)
}

// ConnError is a failed connection or a call whose outcome is unknown
// because the connection broke under it. It matches bridge.ErrUnavailable
// and its cause.
type ConnError struct {
	Addr string
	Op   string
	Err  error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("iggy: %s (%s): %v", e.Op, e.Addr, e.Err)
}

// Unwrap returns the cause and bridge.ErrUnavailable.
func (e *ConnError) Unwrap() []error { return []error{e.Err, bridge.ErrUnavailable} }
