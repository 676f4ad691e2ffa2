// OffsetFetch: v1-9
//
// Behavior:
//   - Reads committed offsets from the Store (bridge.GroupOffsets). A
//     partition with no committed offset, or of an unknown topic, answers
//     offset -1, empty metadata and no error, as Kafka.
//   - A null topic list (v2+) answers every committed offset of the group
//     (on Iggy: one read per partition of every topic in the stream).
//   - v8+ fetch several groups in one request, each with its own error.
//   - Group-level errors (v2+; v1 repeats them per partition): an invalid
//     group id INVALID_GROUP_ID; store unavailable COORDINATOR_NOT_AVAILABLE
//     (clients retry), deadline REQUEST_TIMED_OUT.
//   - require_stable (v7) needs nothing: there are no pending transactional
//     offsets. The v9 member id and epoch (KIP-848) are
//     checked for a consumer-protocol group: unknown member
//     UNKNOWN_MEMBER_ID, older epoch STALE_MEMBER_EPOCH, newer
//     FENCED_MEMBER_EPOCH; no member id with epoch -1 always passes.
//
// Version notes:
//   - v0 is not served (Kafka 4, KIP-896); v2 top-level error and null
//     topics; v5 leader epoch; v6 flexible; v7 require_stable; v8 groups
//     (KIP-709); v10 (topic ids) is not served.

package handlers

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(Spec{Key: 9, MinVersion: 1, MaxVersion: 9, Handle: offsetFetch})
}

func offsetFetch(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	return c.G.coordinator().FetchOffsets(c.Ctx, kreq.(*kmsg.OffsetFetchRequest)), nil
}
