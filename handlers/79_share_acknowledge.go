// ShareAcknowledge: v1-2
//
// Behavior:
//   - Acknowledges records a share-group member acquired through
//     ShareFetch, on its share session: the epoch must be the session's
//     next (INVALID_SHARE_SESSION_EPOCH; 0 is never valid here), no
//     session is SHARE_SESSION_NOT_FOUND, -1 closes the session after
//     applying the acknowledgements and releases what the member still
//     holds. Types accept, release, reject, gap, and renew (v2 with
//     IsRenewAck); each partition answers 0, INVALID_RECORD_STATE for an
//     offset the member does not hold, INVALID_REQUEST for a malformed
//     batch. The acknowledgements are durable before the answer.
//   - ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED at the top).
//
// Version notes:
//   - v0 was Kafka 4.0's early access, removed in 4.1; v2 (Kafka 4.2)
//     adds IsRenewAck (KIP-1222) and AcquisitionLockTimeoutMillis.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/share"
)

func init() {
	register(Spec{Key: 79, MinVersion: 1, MaxVersion: 2, Gated: shareServed, Handle: typedReq(shareAcknowledge)})
}

func shareAcknowledge(c *Call, req *kmsg.ShareAcknowledgeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	g := c.G
	group, member, set, code := c.shareMember(req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(set.LockMs)
	sr := share.SessionRequest{Group: group, Member: member, Epoch: req.ShareSessionEpoch, RenewOK: req.Version >= 2 && req.IsRenewAck, Conn: c.ConnID}
	type named struct {
		id   [16]byte
		name string
		code int16
	}
	topics := make([]named, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		name, code := c.topicNameByID(rt.TopicID)
		topics[i] = named{rt.TopicID, name, code}
		if code != 0 {
			continue
		}
		for _, rp := range rt.Partitions {
			for _, b := range rp.AcknowledgementBatches {
				sr.Acks = append(sr.Acks, share.Ack{TP: share.TP{Topic: name, Partition: rp.Partition},
					First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
			}
		}
	}
	res := g.Share.Session(c.Ctx, sr)
	if res.Code != 0 {
		resp.ErrorCode = res.Code
		if res.Msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(res.Msg)
		}
		return resp, nil
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewShareAcknowledgeResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = c.shareLeader(topics[i].name, rp.Partition)
			if topics[i].code != 0 {
				sp.ErrorCode = topics[i].code
			} else {
				sp.ErrorCode = res.Acks[share.TP{Topic: topics[i].name, Partition: rp.Partition}]
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
