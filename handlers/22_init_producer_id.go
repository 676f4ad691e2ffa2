// InitProducerId: v0-5
//
// Behavior:
//   - Idempotent producers get a fresh producer id from Gateway.Producers
//     (instance id in bits 47..62, a 47-bit counter seeded from the wall
//     clock, bit 63 clear; docs/IDEMPOTENCE.md) and epoch 0. Nothing is
//     persisted and nothing is deduplicated yet: a retried batch is stored
//     twice (at-least-once).
//   - A non-empty transactional_id is refused with UNSUPPORTED_VERSION and
//     producer id/epoch -1; the connection stays open. Transactions are not
//     supported (keys 24/25/26/28 are not served).
//   - v3+ re-initialisation with an existing producer id and epoch (KIP-360
//     epoch bump after an UNKNOWN_PRODUCER_ID / sequence error) gets a fresh
//     id with epoch 0 instead of a bumped epoch; real bumps come with the
//     deduplication issue.
//   - Inline: no store call; one atomic add.
//
// Version notes:
//   - v2 is flexible; v3 adds ProducerID/ProducerEpoch (KIP-360); v4 lets the
//     broker answer PRODUCER_FENCED (KIP-588), which we never send; v5 is
//     KIP-890 part 1 (transactions only). v6 (KIP-939, 2PC) is not served.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 22, MinVersion: 0, MaxVersion: 5, Inline: true, Handle: initProducerID})
}

func initProducerID(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil
	}
	resp.ProducerID = c.G.Producers.Next()
	resp.ProducerEpoch = 0
	return resp, nil
}
