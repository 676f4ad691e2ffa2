// OffsetDelete: v0-0
//
// Behavior:
//   - Deletes committed offsets of a group, per partition, from the store.
//   - A group with live members that subscribes to a topic (read from the
//     consumer protocol metadata of its members) keeps that topic's
//     offsets: GROUP_SUBSCRIBED_TO_TOPIC per partition, as Kafka.
//   - A group neither live nor holding offsets is GROUP_ID_NOT_FOUND; an
//     invalid id INVALID_GROUP_ID; an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION; store failures as OffsetCommit.
//
// Version notes:
//   - Only v0 exists (KIP-496).

package handlers

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(Spec{Key: 47, MinVersion: 0, MaxVersion: 0, Handle: offsetDelete})
}

func offsetDelete(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	return c.G.coordinator().DeleteOffsets(c.Ctx, kreq.(*kmsg.OffsetDeleteRequest)), nil
}
